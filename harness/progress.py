"""The run's progress as the parent process sees it: cells done of the total (counted from
``rows.jsonl``), the cell a worker is on (a control line the worker prints before each), elapsed
and estimated remaining time; over several GPUs, the rows each has given. On a terminal a tqdm
bar under the rows (when tqdm is installed); otherwise each row line carries ``[done/total
elapsed, ~left]``, so logs stay plain text.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

CELL_MARK = "\x1ecell "  # a worker's line announcing the cell it starts: not echoed


def _clock(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    return f"{m // 60}:{m % 60:02d}:{s:02d}" if m >= 60 else f"{m}:{s:02d}"


class Progress:
    def __init__(self, total: int, rows_path: Path, stream=None):
        self.total, self.rows_path = total, rows_path
        self.stream = stream or sys.stdout
        self.start_time = time.monotonic()
        self.done = self._offset = 0
        self.per_slot: dict[int, int] = {}  # rows per GPU slot, in a run over several
        self.bar = None
        if self.stream.isatty():
            try:
                from tqdm import tqdm
                self.bar = tqdm(total=total, unit="cell", file=self.stream, dynamic_ncols=True,
                                leave=False, bar_format="{n}/{total} cells {bar} {elapsed}<{remaining} {postfix}")
            except ImportError:
                pass

    def _count(self) -> None:
        """Rows appended since the last look (the file only grows during a run)."""
        if self.rows_path.exists():
            with open(self.rows_path, "rb") as f:
                f.seek(self._offset)
                chunk = f.read()
            self._offset += len(chunk)
            self.done += chunk.count(b"\n")

    def status(self) -> str:
        elapsed = time.monotonic() - self.start_time
        left = elapsed / self.done * (self.total - self.done) if self.done else None
        eta = f", ~{_clock(left)} left" if left is not None else ""
        slots = "; " + ", ".join(f"gpu slot {s}: {n}" for s, n in sorted(self.per_slot.items())) \
            if self.per_slot else ""
        return f"[{self.done}/{self.total} {_clock(elapsed)}{eta}{slots}]"

    def line(self, text: str, slot: int | None = None) -> None:
        """A line of worker output: a cell announcement updates the bar, others are echoed
        (``slot``: a row's line, from that GPU slot of a run over several)."""
        self._count()
        if slot is not None:
            self.per_slot[slot] = self.per_slot.get(slot, 0) + 1
        if text.startswith(CELL_MARK):
            if self.bar is not None:
                self.bar.set_postfix_str(text[len(CELL_MARK):].strip()[:60], refresh=False)
                self.bar.update(self.done - self.bar.n)
            return
        if self.bar is not None:
            self.bar.write(text.rstrip("\n"), file=self.stream)
            if self.per_slot:
                self.bar.set_postfix_str(self.status()[1:-1].partition("; ")[2], refresh=False)
            self.bar.update(self.done - self.bar.n)
        else:
            prefix = f"{self.status()} " if text.startswith("  ") else ""  # row lines
            self.stream.write(prefix + text if text.endswith("\n") else prefix + text + "\n")
            self.stream.flush()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
