"""`python -m pydantic_ai_toolproxy`: the `toolproxy` command line (see `pydantic_ai_toolproxy.cli`)."""

import sys

from .cli import main

if __name__ == '__main__':
    sys.exit(main())
