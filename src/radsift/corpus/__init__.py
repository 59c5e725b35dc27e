"""radsift.corpus"""
