"""Other tools' results and ours: their logs read as runs (`assay runs import`), and runs sent to an
OpenTelemetry collector (`assay runs export`). Each format's reader is imported only when used."""
