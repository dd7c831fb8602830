"""One line at the bottom of a terminal, redrawn in place, with every other
line of output scrolling above it.

The line is drawn from the first column, its leftovers erased ("erase to end
of line"), and the cursor goes back to the first column. Anything else
written to the terminal must first erase it and draw it again after, or the
two would share a row: the handler's own lines do (LiveLine.above), and so
does text that Python code in the Snakemake process writes to sys.stdout or
sys.stderr (perfsnake's prints, the summary at the end), through Through,
which stands in for those streams while the line is live. A job's
subprocess that writes to the terminal directly is out of reach: its text
starts over the live line from the first column (which is why the cursor
waits there rather than at the end of the line, where the text would be
glued on), and the next redraw puts the line below it.
"""

from __future__ import annotations

import os
import shutil
import threading
from typing import Any, TextIO

ERASE_LINE = "\r\x1b[K"


class LiveLine:
    def __init__(self, stream: TextIO, lock: threading.RLock | None = None) -> None:
        self.stream = stream
        #: held while anything is written to the terminal (re-entrant: a
        #: handler's write may come back through Through)
        self.lock = lock or threading.RLock()
        self.text = ""
        self.shown = False

    def width(self) -> int:
        """The terminal's columns, less one: a full line would wrap on some terminals."""
        try:
            columns = os.get_terminal_size(self.stream.fileno()).columns
        except (AttributeError, ValueError, OSError):  # not a terminal after all
            columns = shutil.get_terminal_size((80, 24)).columns
        return max(columns - 1, 20)

    def show(self, text: str, again: bool = False) -> None:
        """Draw `text` (when it changed, or `again`: a subprocess may have written over it)."""
        with self.lock:
            if text == self.text and self.shown and not again:
                return
            self.text = text
            if text:
                # Written over the old line, then its leftovers erased: no blank flash.
                self.stream.write("\r" + text + "\x1b[K\r")
                self.shown = True
            else:
                self.erase()
            self.stream.flush()

    def erase(self) -> None:
        with self.lock:
            if self.shown:
                self.stream.write(ERASE_LINE)
                self.shown = False

    def above(self, text: str, stream: TextIO | None = None) -> None:
        """Complete lines of output, into the scroll-back above the live line."""
        with self.lock:
            self.erase()
            self.stream.flush()
            out = stream or self.stream
            out.write(text if text.endswith("\n") else text + "\n")
            out.flush()
            if self.text:
                self.show(self.text, again=True)

    def close(self) -> None:
        with self.lock:
            self.erase()
            self.text = ""
            self.stream.flush()


class Through:
    """Stands in for sys.stdout or sys.stderr: complete lines go above the live
    line, a partial one waits for its end; everything else (fileno, isatty,
    encoding, ...) is the real stream's."""

    def __init__(self, real: TextIO, live: LiveLine) -> None:
        self.real = real
        self.live = live
        self.pending = ""

    def write(self, text: str) -> int:
        with self.live.lock:
            self.pending += text
            if "\n" in self.pending:
                lines, _, self.pending = self.pending.rpartition("\n")
                self.live.above(lines + "\n", self.real)
        return len(text)

    def writelines(self, lines: list[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self.real.flush()

    def drain(self) -> None:
        """What is left of a partial line, written as it is (at the end)."""
        with self.live.lock:
            if self.pending:
                self.live.erase()
                self.real.write(self.pending)
                self.pending = ""
            self.real.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)
