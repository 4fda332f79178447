from assay.cli.app import main

main()
