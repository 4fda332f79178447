from agents.note_taker import note_eval

login = note_eval("log in (runs second in the flow group: members run in id order)")
