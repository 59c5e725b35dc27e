"""radsift.evaluation"""
