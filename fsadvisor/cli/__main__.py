try:
    # inside the try: a Ctrl-C while the CLI loads ends in one line (below), not a traceback
    from fsadvisor.cli.app import main

    main()
except KeyboardInterrupt:  # Ctrl-C while loading, before the CLI handles it itself
    from fsadvisor.errors import exit_interrupted  # only when interrupted

    exit_interrupted()
