import sys

from perfsnake.cli import main

sys.exit(main())
