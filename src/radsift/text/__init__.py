"""radsift.text"""
