from agents.note_taker import note_eval

evals = {name: note_eval(f"independent task {name}") for name in ("one", "two", "three")}
