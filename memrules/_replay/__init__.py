"""Replay: a trace run again through the pipelines and plugins it recorded,
its seams answered from the trace, and what differs said by place.
"""
