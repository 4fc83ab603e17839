from fsadvisor.cli import main

main()
