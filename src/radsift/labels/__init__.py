"""radsift.labels"""
