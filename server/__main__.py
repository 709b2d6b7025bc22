"""`python -m server`: serve the memory over stdio (see `server.cli`)."""

from server.cli import main

raise SystemExit(main())
