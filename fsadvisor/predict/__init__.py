"""Prediction: the device-aware model (fit, predict, cross-validate), the ranking of candidates
and the simpy what-if simulator. Pure computation: nothing here touches the machine."""
