"""File layouts shared by several benchmarks: the layout is read here once, each benchmark declares only its data."""
