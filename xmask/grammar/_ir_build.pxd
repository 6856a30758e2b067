# IR nodes of the one-field kinds (Seq, Choice, Bytes, RuleRef) made from C without their
# Python __init__ frame (see _ir_build.pyx).
cdef object new_node(object cls, str field, object value)
