"""radsift.demo"""
