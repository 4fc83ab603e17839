"""One module per tab of the TUI: profile, device, results, energy, history, probe."""
