"""The response phase: what the model answered, measured and governed.

``guard``    applies the response policy (``core.responses``) to one answer: a JSON
             completion at once, a stream event by event, holding back only what a guard
             still has to see; and measures tokens and timings
``explain``  the response decisions on a given answer, for ``vsr-extproc explain``

The answer itself (``core.answer``) and the response decisions (``core.responses``) are
part of the pure core: the request's rule language over what the model answered.
"""
