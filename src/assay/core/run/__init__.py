"""The run pipeline every kind goes through: its kinds (`kinds`), what a run is asked (`request`),
`--resume` (`resume`), and the run and merge bodies (`pipeline`)."""
