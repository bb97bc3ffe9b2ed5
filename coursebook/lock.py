"""Print the exact pins of the current environment for ``requirements.lock``."""
from __future__ import annotations

import re
import subprocess
import sys

HEADER = (
    "# Exact pins of the course's Python stack (make venv installs this, then the project with --no-deps).\n"
    "# Regenerate with: make lock. torch==2.13.0 matches the CPU build (2.13.0+cpu) where one is offered.\n"
)


def main() -> int:
    out = subprocess.run(
        [sys.executable, "-m", "pip", "freeze", "--exclude-editable"], capture_output=True, text=True, check=True
    ).stdout
    pins = []
    for line in out.splitlines():
        if not line or line.lower().startswith("tilelang-course"):
            continue
        m = re.match(r"^([A-Za-z0-9_.\-]+) @ file://.*?/([A-Za-z0-9_.]+)-([0-9][^-]*)-", line)
        if m:  # installed from a local wheel file: pin the version instead
            line = f"{m.group(1)}=={m.group(3)}"
        line = re.sub(r"^(torch==[0-9.]+)\+cpu$", r"\1", line)
        pins.append(line)
    sys.stdout.write(HEADER + "\n".join(sorted(pins, key=str.lower)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
