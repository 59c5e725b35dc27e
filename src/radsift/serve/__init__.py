"""radsift.serve"""
