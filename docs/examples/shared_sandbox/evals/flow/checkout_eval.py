from agents.note_taker import note_eval

checkout = note_eval("check out (runs first in the flow group)")
