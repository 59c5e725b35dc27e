"""radsift.search"""
