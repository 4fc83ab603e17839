"""Rendering of results for people: the HTML report (html.py), its charts (charts.py) and
bar charts for the terminal (terminal.py). Pure functions of plain data (the dicts the
service builds); nothing here reads the store or fits a model, and the heavy libraries
(matplotlib, plotext) are imported inside the functions that draw."""
