"""What the full-scale benchmarks share (not a benchmark itself): run a contender in a fresh process and measure its
wall time, its peak RSS, the peak size of its work folder and the load average around it; alternate contenders in a
rotating order; print one Markdown table with every figure beside the floor measured in the same run.

Peak RSS is the child's own (os.wait4: the largest resident set of the process and of any process it waited for),
so one contender's figure never carries over to the next. Peak disk is the largest total size of the watched
folders, polled every 0.2 s on a thread.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field


def folder_bytes(*paths: str) -> int:
    """Total size of the files under `paths` (files that vanish while walking are skipped)."""
    total = 0
    for root in paths:
        for folder, _, files in os.walk(root):
            for name in files:
                try:
                    total += os.lstat(os.path.join(folder, name)).st_size
                except OSError:
                    pass
    return total


class DiskPeak:
    """The largest total size of `paths` seen while running (polled on a thread)."""

    def __init__(self, *paths: str):
        self.paths, self.peak, self.done = paths, 0, threading.Event()
        self.thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        while not self.done.wait(0.2):
            self.peak = max(self.peak, folder_bytes(*self.paths))

    def __enter__(self) -> DiskPeak:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.thread.join()
        self.peak = max(self.peak, folder_bytes(*self.paths))


@dataclass
class Contender:
    """One command to time. `floor`: a reference the others are compared with (the first floor is the ratio's
    base). `scale`: the factor its time is multiplied by in the table (a floor measured on a cut of the input)."""

    label: str
    command: Sequence[str]
    env: dict[str, str] = field(default_factory=dict)
    floor: bool = False
    scale: float = 1.0
    input_bytes: int | None = None
    """Bytes the contender reads, for MB/s (default: the run's input size)."""


def measure(contender: Contender, work: str) -> dict:
    """Run `contender` once in a fresh process with an empty scratch folder (`{scratch}` in its command and env is
    replaced by it), deleted afterwards; its seconds, peak RSS, peak disk, output size and the load around it."""
    scratch = tempfile.mkdtemp(prefix="bench-full-", dir=work)
    command = [part.replace("{scratch}", scratch) for part in contender.command]
    env = {**os.environ, "HF_DATASETS_DISABLE_PROGRESS_BARS": "1",
           **{k: v.replace("{scratch}", scratch) for k, v in contender.env.items()}}
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryFile() as stderr, DiskPeak(scratch) as disk:
        start = time.perf_counter()
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr, env=env)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        stderr.seek(0)
        errors = stderr.read().decode("utf-8", "replace")
    out = os.path.join(scratch, "out")
    result = {"seconds": round(seconds, 2), "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 2),
              "load_before": round(load_before, 1), "load_after": round(os.getloadavg()[0], 1),
              "peak_rss_bytes": usage.ru_maxrss * 1024, "peak_disk_bytes": disk.peak,
              "output_bytes": folder_bytes(out), "returncode": process.returncode}
    shutil.rmtree(scratch, ignore_errors=True)
    if process.returncode != 0:
        raise RuntimeError(f"{contender.label}: {command[:4]} failed ({process.returncode}):\n{errors[-3000:]}")
    return result


def rotate(contenders: Sequence[Contender], rounds: int, work: str, log=print) -> dict[str, list[dict]]:
    """Every contender `rounds` times, round r starting at contender r (mod n), so no contender keeps one slot."""
    results: dict[str, list[dict]] = {c.label: [] for c in contenders}
    for round_ in range(rounds):
        shift = round_ % len(contenders)
        for contender in [*contenders[shift:], *contenders[:shift]]:
            result = measure(contender, work)
            results[contender.label].append(result)
            log(f"round {round_ + 1} {contender.label}: {result}")
    return results


def table(contenders: Sequence[Contender], results: dict[str, list[dict]], input_bytes: int) -> str:
    """A Markdown table of each contender's best round: seconds (scaled for a cut), x the first floor, MB/s, CPU
    seconds, peak RSS, peak disk, output and the load average before/after that round."""
    best = {c.label: min(results[c.label], key=lambda r: r["seconds"]) for c in contenders}
    floor = next((c for c in contenders if c.floor), contenders[0])
    base = best[floor.label]["seconds"] * floor.scale
    lines = ["| contender | s | x floor | MB/s | CPU s | peak RSS MB | peak disk MB | output MB | load before/after |",
             "|---|---|---|---|---|---|---|---|---|"]
    for c in contenders:
        r = best[c.label]
        seconds = r["seconds"] * c.scale
        shown = f"{seconds:.1f}" if c.scale == 1 else f"{seconds:.1f} ({r['seconds']:.1f} x {c.scale:g})"
        speed = (c.input_bytes or input_bytes) * c.scale / 1e6 / seconds
        lines.append(f"| {c.label} | {shown} | {seconds / base:.2f} | {speed:.1f} | {r['cpu_seconds'] * c.scale:.1f} "
                     f"| {r['peak_rss_bytes'] / 1e6:.0f} | {r['peak_disk_bytes'] / 1e6:.0f} "
                     f"| {r['output_bytes'] / 1e6:.0f} | {r['load_before']}/{r['load_after']} |")
    return "\n".join(lines)
