"""The response phase: what the model answered, measured and governed.

``answer``  the model's answer as far as it has arrived (JSON or server-sent events)
``policy``  response decisions: rules over ``tool_call`` and ``output`` signals, actions
            block, redact and annotate
``guard``   applies them to a JSON answer at once, or to a stream event by event, holding
            back only what a guard still has to see
``usage``   tokens and timings for the metrics and the replay record
"""
