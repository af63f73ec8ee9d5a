"""``python -m memctx``: the ``memctx`` command line."""

from memctx.cli import main

if __name__ == "__main__":
    main(prog_name="memctx")
