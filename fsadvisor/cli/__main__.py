try:
    from fsadvisor.cli import main

    main()
except KeyboardInterrupt:  # Ctrl-C while loading, before the CLI handles it itself
    import os
    import sys

    sys.stderr.write("fsadvisor: interrupted\n")
    sys.stderr.flush()
    os._exit(130)
