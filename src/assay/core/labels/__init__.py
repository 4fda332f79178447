"""Human labels and judge–human agreement: labels stored append-only in the results store, what each
kind's judges said about a unit, the label queue, and the statistics (κ, α, Spearman) over them.
"""
