"""`python -m rmq` runs the same entry point as the `rmq` console script."""

from rmq.cli.main import main

if __name__ == "__main__":
    main()
