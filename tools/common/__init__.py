"""What the commands share: the parser and its errors, progress bars, terminal tables."""

from chronograph.tools.common.parsing import Parser, add_store_argument, script_main
from chronograph.tools.common.progress import Progress
from chronograph.tools.common.terminal import format_rows, print_rows

__all__ = ["Parser", "Progress", "add_store_argument", "format_rows", "print_rows", "script_main"]
