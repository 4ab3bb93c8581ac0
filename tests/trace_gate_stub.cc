// trace_gate_stub.cc — a stand-in for libemo_inject.so's EmoTraceRecording, which the NCCL plugin
// asks whether an event belongs to the trace; the test sets the answer.
extern "C" {
__attribute__((visibility("default"))) int emo_trace_gate_answer = 1;
__attribute__((visibility("default"))) int EmoTraceRecording(void) { return emo_trace_gate_answer; }
}
