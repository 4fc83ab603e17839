try:
    from fsadvisor.cli import main

    main()
except KeyboardInterrupt:  # Ctrl-C while loading, before the CLI handles it itself
    from fsadvisor.errors import exit_interrupted

    exit_interrupted()
