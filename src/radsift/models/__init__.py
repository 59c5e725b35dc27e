"""radsift.models"""
