/**
 * Every threshold of the rule diagnoser (rules.ts, messages.ts) in one place, each with the reason for its value.
 * Latency is judged against what the trace's other calls predict, with the floors below; confidences rank evidence
 * and are not measurements.
 */

/** A span counts as faulty when its strongest signal reaches this: a detector's 0.5 "maybe" is a hint, not a fault. */
export const MIN_CONFIDENCE = 0.55;
/** What a near-miss is kept as (below MIN_CONFIDENCE, shown among the weak signals): a length stop at the app's own
 * max_tokens, a slow call within the trace's spread. */
export const HINT_CONFIDENCE = 0.45;

// ---------------------------------------------------------------------------------------------- LLM call latency

/** Fewer successful calls than this (of the model, else of the trace) give no baseline to be slow against. */
export const LATENCY_MIN_CALLS = 3;
/** Per-call overhead in output-token equivalents when duration is predicted from output size: time to first token
 * is of the order of a few dozen tokens' generation at the providers' published throughputs (tens of tokens / s and
 * a TTFT of 0.3–1 s), so a short answer is not predicted to take nothing. */
export const LATENCY_OVERHEAD_TOKENS = 40;
/** Characters per token when usage is unknown (OpenAI's rule of thumb for English). */
export const CHARS_PER_TOKEN = 4;
/** Fewest characters a token of text stands for: OpenAI's tokenizers average about 4 on English and about 1 on CJK
 * text, so an answer shorter than one character per token spent is not the whole answer the model produced. */
export const MIN_CHARS_PER_TOKEN = 1;
/** A call whose duration stands for a message's transit (messages.ts) is slower (a hint) at least this much beyond
 * the trace's other calls: that duration includes the receiver's own work, and below a second a slower one is within
 * what a provider's queueing and a busy host add on their own (published time-to-first-token p99s are of that order). */
export const DELAY_MIN_EXTRA_MS = 1000;
/** A slower LLM call (a hint; a fault when it is also an outlier, DELAY_FAULT_RATIO) is at least this many times what
 * the trace's other calls predict (and LLM_DELAY_NOISE_MS beyond it). */
export const DELAY_MIN_RATIO = 3;
/** A call is a latency outlier among the trace's calls of its model when its modified z-score, 0.6745·(x − median) /
 * MAD, reaches 3.5: Iglewicz and Hoaglin's recommended cut-off for that score (robust to the outlier itself). */
export const MAD_Z_SCALE = 0.6745;
export const OUTLIER_Z = 3.5;
/** The MAD is floored at this fraction of the median: on a short trace (three or four calls) the MAD can be near 0 by
 * chance, and one model's per-token latency varies by tens of percent from call to call under steady load; with the
 * cut-off above, an outlier is then at least about 2.3× the median, never a few percent above it. */
export const LATENCY_MAD_FLOOR = 0.25;
/** A latency outlier is a fault (a hint otherwise) only at this many times what the other calls predict: relative to
 * the run's own latency, not a fixed number of seconds, so that a fast model or a fast clock is judged as a slow one
 * is. A provider's p99 is a few times its median; 3.5× on top of the outlier fence is past what the log-normal spread
 * of normal calls gives once in hundreds of calls, and past one call's excursion against a short baseline of two or
 * three calls. */
export const DELAY_FAULT_RATIO = 3.5;
/** Below this much beyond what the other LLM calls predict, a slower call is a busy host's scheduling and garbage
 * collection (tens to a couple of hundred ms), whatever the ratio: the one absolute floor of LLM-call latency. */
export const LLM_DELAY_NOISE_MS = 250;
/** A call the client gave up on was held this many times longer than any answered call of the trace (gave-up.ts). */
export const GAVE_UP_RATIO = 3;
/** Confidence of a latency outlier beyond the fence, and of a slow call within the trace's spread (a hint). */
export const DELAY_CONFIDENCE = 0.75;
export const DELAY_HINT_CONFIDENCE = HINT_CONFIDENCE;

// ---------------------------------------------------------------------------------------------- message latency

/** A delivery this much slower than the trace's median delivery, and this many times it, arrived late. (In process a
 * delivery takes a millisecond; over HTTP on a busy host, a hundred or two: the margin is above both.) */
export const MESSAGE_DELAY_EXTRA_MS = 300;
/** Over the network (A2A, MCP), where a busy host's scheduling alone moves a delivery by hundreds of ms. */
export const REMOTE_MESSAGE_DELAY_EXTRA_MS = 500;
export const MESSAGE_DELAY_RATIO = 3;
/** A sender that waited this long beyond the median of its other calls, and 3× it, before nothing arrived timed out. */
export const WAITED_MS = 250;
/** Clock slack when comparing a message's own send time with the run's start (other hosts, other clocks). */
export const CLOCK_SLACK_MS = 1000;
/** A message whose transit is known only as its call's duration (no receiver-side time): the call includes the
 * receiver's own work, which varies by seconds, so only DELAY_MIN_EXTRA_MS beyond the trace's other calls (and 3×
 * them) is a hint, and this much more (and 4×) a fault. */
export const CALL_DELAY_EXTREME_MS = 4000;

// ---------------------------------------------------------------------------------------------- tool arguments

/** A value copied from the conversation and cut is at most this long (longer strings are prose, not copied ids). */
export const CUT_VALUE_MAX_CHARS = 300;
/** An identifier-like argument (where symbol characters cannot belong) is at most this long and has no spaces. */
export const ID_MAX_CHARS = 60;

// ---------------------------------------------------------------------------------------------- repeated answers

/** An answer that is, byte for byte, another agent's earlier output is a replay (a cache, a mixed-up handoff) when it
 * is at least this long: below it, short verdicts ("OK", `{"approved":true}`) coincide between agents on their own. */
export const REPLAY_OTHER_AGENT_MIN_CHARS = 20;
/** The same agent's own earlier output, asked anew with another input, is a replay only past this length: an agent
 * legitimately repeats a short verdict or an objection it still holds, not a paragraph of prose. */
export const REPLAY_SAME_AGENT_MIN_CHARS = 80;
/** An answer that is one passage twice or more end to end was delivered more than once when the passage is at least this
 * long: a model does not restate a sentence-length passage word for word at once; short tokens ("ha ha") it does. */
export const DOUBLED_MIN_CHARS = 20;

// ---------------------------------------------------------------------------------------------- consensus shape

/** Where no schema was recorded, the trace's other instances of a document (the same tool's other calls, the same
 * agent's other structured answers) are its reference only when at least this many agree: against one other
 * instance, either of the two may be the odd one, and an optional key present in one call and absent in the other
 * looks like a breach; two that agree make the third the odd one out. */
export const CONSENSUS_MIN_OTHERS = 2;
/** A breach of the run's consensus shape: above MIN_CONFIDENCE (it is the only evidence a producer without tool
 * definitions leaves of a schema drift), below a declared schema's breach (0.8–0.85), which knows what is required
 * rather than inferring it from a handful of instances. */
export const CONSENSUS_CONFIDENCE = 0.7;

// ---------------------------------------------------------------------------------------------- the file's other traces

/** A document its own trace cannot judge (no schema recorded, fewer than CONSENSUS_MIN_OTHERS other instances in the
 * trace: a workflow's one structured handoff, a specialist's one tool call) is judged against the same document in
 * the traces read before it once this many were seen: as in the trace, two instances may disagree with each other by
 * chance (an optional key), and three that agree make a fourth the odd one out. */
export const FLEET_MIN_INSTANCES = 3;
/** Earlier instances that may disagree with the rest without breaking their agreement: none below FLEET_ODD_FROM
 * instances, then one, and one in twenty (FLEET_ODD_SHARE) from forty on. Why any: the first instances of a document
 * are never judged, so a fault nothing showed then is remembered, and with unanimity that one instance would hide every
 * later fault of its kind. Why so few: a key an app's model leaves out now and then (an optional field set in most
 * answers) must become optional — two earlier instances without it (under forty) make it so. */
export const FLEET_ODD_FROM = 5;
export const FLEET_ODD_SHARE = 0.05;
/** Below the trace's own consensus (0.7): other runs may have been asked other things; above MIN_CONFIDENCE, since a
 * key every earlier run's instance carried is as strong a contract as an inferred one gets. */
export const FLEET_CONFIDENCE = 0.65;
/** Memory across traces is bounded: document kinds kept (a tool, an agent's instructions), and distinct shapes per
 * kind — a kind whose documents come in more shapes than this has keys that are data (names, ids), not a schema, and
 * is never judged. */
export const FLEET_MAX_KINDS = 10_000;
/** A trace whose document has too few other instances yet waits for at most this many later traces (their outputs
 * wait behind it, in order): long enough for a workflow's next few runs in an export of several workflows, short
 * enough that what waits is a few hundred small results, not a file. */
export const FLEET_WAIT_TRACES = 256;
export const FLEET_MAX_SHAPES = 64;
