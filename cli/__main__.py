"""`python -m cli ...`: the same as the `subword` console script (torchrun runs it this way)."""

from cli.main import main

main()
