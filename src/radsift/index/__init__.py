"""radsift.index"""
