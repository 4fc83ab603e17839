"""Where fsadvisor's files are, how they are read, how the text it writes is laid out: the
shipped data (``resources``: datasets/, models/, runner/ in a checkout or a wheel's copy),
the per-user store and cache directories (``xdg``), reading a file a user named within
bounds (``readfile``), and the scripts and files fsadvisor writes, comments folded to 80
columns and commands whole (``scripttext``).

The bottom of the layers beside the nouns: nothing here imports anything else of fsadvisor,
so every layer can use it. Empty on purpose: importing a module here loads only that module.
"""
