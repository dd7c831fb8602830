"""perfsnake: declarative systems-performance campaigns run as a Snakemake DAG.

The package holds the logic; the Snakemake rules under rules/ stay thin and
call into it.
"""

from pathlib import Path

__version__ = "0.1.0"

#: Root of the perfsnake checkout (holds config/, rules/, src/ ...).
ROOT = Path(__file__).resolve().parent.parent
