"""Sharing one model among concurrent requests: light ones decoded together (`batching`)."""
