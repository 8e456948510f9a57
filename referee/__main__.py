"""``python -m referee``."""

from referee.cli.main import main

raise SystemExit(main())
