"""`python -m chronograph ...`: the `chronograph` command (see `chronograph.tools.cli`)."""

from chronograph.tools.cli import main

raise SystemExit(main())
