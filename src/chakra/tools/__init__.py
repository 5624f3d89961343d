"""Libraries behind the companion tools: generator, visualizer, timeline visualizer, validate."""
