"""Where fsadvisor's files are and how they are read: the shipped data (``resources``: datasets/,
models/, runner/ in a checkout or a wheel's copy), the per-user store and cache directories
(``xdg``), and reading a file a user named within bounds (``readfile``).

The bottom of the layers beside the nouns: nothing here imports anything else of fsadvisor,
so every layer can use it. Empty on purpose: importing a module here loads only that module.
"""
