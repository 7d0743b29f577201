import impls  # noqa: F401  (first: picks the CPU interpreters before any DSL import)

from harness.cli import main

raise SystemExit(main())
