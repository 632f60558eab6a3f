#include "simulate.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <queue>
#include <set>
#include <string>

#include "roofline/deadline.h"
#include "roofline/error.h"

namespace roofline::detail {
namespace {

struct Request {
  std::int32_t client = 0;
  double arrival = 0, admitted = -1, first_chunk = -1, first_token = -1;
  // When its last token was streamed, as of its last step apart from its
  // instance's decode runs (a prefill's token; a preemption's last decode step).
  double last_token = -1;
  double received = -1;           // when the engine took it in (a receive interval delays it)
  std::int64_t isl = 0, osl = 0;  // its lengths
  std::int64_t own = 0;           // prompt tokens it computes and holds (past the cached prefix)
  std::int64_t steps = 0;         // output steps it takes (the prefill's included)
  std::int64_t target = 0;        // prompt tokens to compute (more after a preemption)
  std::int64_t prefilled = 0;     // of target
  // Output steps so far (the prefill's token, then one a decode step), when
  // not decoding; a step yields tokens_per_step tokens.
  std::int64_t generated = 0;
  std::int64_t offset = 0;   // while decoding: generated = offset + the instance's decode_step
  std::uint64_t order = 0;   // admission order (the newest is preempted first)
  std::int32_t home = 0;     // disaggregated: the decode instance holding its cache
  std::int32_t prompt = -1;  // its prompt's index in the pool (-1: no pool)
  std::int32_t group = 0;    // attention-DP balance: the group holding it
  // When it last joined its instance's queue (waiting or ready), and whether
  // it was sent in reply to a response given at that instant.
  double queued = 0;
  bool reply = false;
  // KV tokens its blocks hold beyond its own: the unused part of the last
  // block it took at admission (kept while it grows a token a step).
  double slack = 0;
};

struct Instance {
  const PoolSpec* pool = nullptr;
  std::deque<std::int32_t> waiting;     // arrived (or preempted), not admitted
  std::deque<std::int32_t> prefilling;  // admitted, prompt not finished
  std::deque<std::int32_t> ready;       // decode pool: prompt done and its cache moved in
  std::set<std::pair<std::int64_t, std::int32_t>> decoding;   // (done step, request)
  std::set<std::pair<std::uint64_t, std::int32_t>> by_order;  // the same by admission order
  std::multiset<double> pending;  // times of arrivals and handoffs on their way
  // Steps that carried decode tokens (prefill-first steps pause decoding):
  // a decoding request's output count is its offset plus this.
  std::int64_t decode_step = 0;
  std::int64_t context_offset = 0;  // sum of the decoding requests' offsets
  std::int64_t context_isl = 0;     // sum of the decoding requests' prompt lengths
  std::int64_t running = 0;         // admitted requests
  double kv_used = 0;               // tokens of KV cache held
  bool busy = false;
  // Batches formed a step ahead: the next step takes what had queued before
  // this instant (the start of the step under way); +inf when idle.
  double cutoff = std::numeric_limits<double>::infinity();
  // Replies sent at the cutoff made it too: the step then under way started
  // from an idle loop, which forms the next batch a moment after launching.
  bool ties_in = false;
  bool from_idle = false;  // the step under way started from an idle loop
  // Batches formed a step ahead: the requests that finished with the last
  // step are still in the next one (their completion was not yet known when
  // it was formed), a decode token each that nobody receives, at this
  // summed context.
  std::int64_t finished = 0;
  double finished_context = 0;
  // The step under way: how many steps it stands for, when it began, its
  // chunks. Step j of a run ends at started + j step_s (started is later than
  // begun by what finished requests riding along add to the first step).
  std::int64_t k = 0, decode_now = 0;
  double begun = 0, started = 0, step_s = 0;
  // The gaps between streamed tokens: when the last run with decode tokens
  // ended (every request decoding through it got its token then), the
  // requests that started decoding since (their last token their own), and
  // those of them in the run under way.
  double last_decode_end = 0;
  std::vector<std::int32_t> joined, run_joined;
  std::uint64_t epoch = 0;  // a step's end event is stale once this moves on
  std::vector<std::pair<std::int32_t, std::int64_t>> chunks;
  // Batch waiting: waits counted since prompts were last taken (TensorRT-LLM's
  // batch_wait_iters_count), and whether the step under way is one.
  std::int64_t waits = 0;
  bool waiting_run = false;
  // A receive interval: requests arrived but not yet taken in, the weight of
  // the steps since the last intake, and the weight of the step under way.
  std::deque<std::int32_t> inbox;
  std::int64_t recv_counter = 0, recv_weight = 0;
  // Arrivals queued since the last step started: the next step takes them in.
  std::vector<std::int32_t> fresh;
  // A prompt pool: the prompts whose KV cache the prefix cache keeps, and their tokens summed.
  std::vector<bool> kept;
  double kept_tokens = 0;
  // Attention-DP balance: each group's admitted, prompt-starting and decoding
  // requests; the counts of steps (TensorRT-LLM's adp_ctx_waiting_iters_count
  // and adp_ctx_batching_wait_iters_count) as the step under way left them;
  // how the step under way counts (a run's later steps count alike) and
  // whether it held prompts back.
  std::vector<std::int32_t> group_running, group_prefilling, group_decoding;
  std::int64_t balance_count = 0, batching_count = 0;
  // kReleased: the count was reset because some group had nothing decoding
  // (then every step of the run resets it).
  enum class BalanceRun : std::uint8_t { kAllReady, kCounting, kReleased, kBatching } balance_run{};
  bool balance_held = false;
};

struct Event {
  enum class Kind : std::uint8_t { kArrival, kReady, kStepEnd };
  double time = 0;
  std::uint64_t seq = 0;  // ties in insertion order
  Kind kind = Kind::kStepEnd;
  std::int32_t instance = 0, request = 0;
  std::uint64_t epoch = 0;  // step ends: the instance's epoch when scheduled
  bool operator>(const Event& o) const noexcept {
    return time != o.time ? time > o.time : seq > o.seq;
  }
};

class Simulation {
 public:
  explicit Simulation(const SimSpec& s)
      : s_(s),
        per_step_(s.tokens_per_step),
        isl_min_(s.isl_min > 0 ? s.isl_min : s.isl),
        osl_min_(s.osl_min > 0 ? s.osl_min : s.osl) {
    const auto add = [this](const PoolSpec& p) {
      for (std::int64_t i = 0; i < p.instances; ++i) {
        instances_.emplace_back();
        instances_.back().pool = &p;
      }
    };
    add(s.first);
    first_count_ = static_cast<std::int32_t>(instances_.size());
    for (Instance& in : instances_) {
      const auto groups = static_cast<std::size_t>(in.pool->balance_groups);
      in.group_running.assign(groups, 0);
      in.group_prefilling.assign(groups, 0);
      in.group_decoding.assign(groups, 0);
    }
    if (s.prompt_pool > 0) {
      pool_isl_.assign(static_cast<std::size_t>(s.prompt_pool), 0);
      for (Instance& in : instances_)
        in.kept.assign(static_cast<std::size_t>(s.prompt_pool), false);
    }
    if (s.decode) add(*s.decode);
    remaining_.assign(static_cast<std::size_t>(s.clients), s.requests_per_client);
    const std::size_t total = static_cast<std::size_t>(s.clients * s.requests_per_client);
    requests_.reserve(total);
    r_.ttft_s.reserve(total);
    r_.tpot_s.reserve(total);
    r_.e2e_s.reserve(total);
  }

  SimResult run() {
    // Every client sends its first request at once, as a benchmark starts.
    for (std::int32_t c = 0; c < s_.clients; ++c) send(c, 0.0);
    std::uint64_t handled = 0;
    while (!events_.empty()) {
      const Event e = events_.top();
      events_.pop();
      if ((++handled & 0xfff) == 0) check_deadline("serving simulation");
      Instance& in = instances_[static_cast<std::size_t>(e.instance)];
      if (e.kind == Event::Kind::kStepEnd) {
        if (e.epoch == in.epoch) finish_step(e.instance, e.time);
        continue;
      }
      in.pending.erase(in.pending.find(e.time));
      req(e.request).queued = e.time;
      if (e.kind == Event::Kind::kArrival && in.pool->recv_interval > 1 && in.busy) {
        // The engine takes it in at its next intake (start_step); a run of
        // decode steps already ends there.
        in.inbox.push_back(e.request);
        continue;
      }
      if (e.kind == Event::Kind::kArrival) in.fresh.push_back(e.request);
      (e.kind == Event::Kind::kArrival ? in.waiting : in.ready).push_back(e.request);
      // An engine's loop starts a step as soon as it has work: of a burst
      // of clients, the first request to arrive runs alone and the others,
      // a moment behind it, share the next step.
      if (!in.busy) {
        in.cutoff = std::numeric_limits<double>::infinity();  // an idle loop takes it at once
        in.from_idle = true;
        start_step(e.instance, e.time);
      } else if (in.k > 1) {
        cut_short(e.instance, e.time);
      }
    }
    double admit = 0, chunk = 0, recv = 0;
    std::int64_t counted = 0;
    for (const Request& q : requests_) {
      if (q.admitted < 0) continue;
      admit += q.admitted - q.arrival;
      if (q.received >= 0) recv += q.received - q.arrival;
      if (q.first_chunk >= 0) chunk += q.first_chunk - q.admitted;
      ++counted;
    }
    if (counted > 0) {
      r_.admit_wait_s = admit / static_cast<double>(counted);
      r_.chunk_wait_s = chunk / static_cast<double>(counted);
      r_.recv_wait_s = recv / static_cast<double>(counted);
    }
    // Every request gave back what it took: the pools end empty.
    for (const Instance& in : instances_) {
      r_.kv_left = std::max(r_.kv_left, std::fabs(in.kv_used));
      r_.running_left += in.running;
    }
    return std::move(r_);
  }

 private:
  Request& req(std::int32_t id) { return requests_[static_cast<std::size_t>(id)]; }

  void push(double time, Event::Kind kind, std::int32_t instance, std::int32_t request) {
    events_.push(Event{time, seq_++, kind, instance, request,
                       instances_[static_cast<std::size_t>(instance)].epoch});
  }

  // A run of decode steps ends with the step under way when something
  // arrives that the run's start did not know of (a handoff from another
  // pool), so the newcomer joins as soon as the engine could take it.
  void cut_short(std::int32_t index, double now) {
    Instance& in = instances_[static_cast<std::size_t>(index)];
    if (!(in.step_s > 0)) return;
    // Steps done or under way (the first may be longer: `now` before `started`).
    const auto done = std::max<std::int64_t>(
        1, static_cast<std::int64_t>(std::floor((now - in.started) / in.step_s)) + 1);
    // A batch formed a step ahead: the step after the one under way is set.
    const std::int64_t keep =
        std::clamp<std::int64_t>(done + (in.pool->formed_a_step_ahead ? 1 : 0), 1, in.k);
    if (keep == in.k) return;
    const std::int64_t dropped = in.k - keep;
    if (in.recv_weight < 1000) in.recv_weight -= dropped;  // a decode run's intake weight
    if (in.waiting_run) {
      in.waits -= dropped;
      r_.waited_steps -= dropped;
    }
    if (in.balance_held) r_.balance_held_steps -= dropped;
    r_.steps -= dropped;
    r_.busy_s -= static_cast<double>(dropped) * in.step_s;
    r_.decoding_step_sum -= static_cast<double>(dropped * in.decode_now);
    if (in.decode_now > 0) r_.decode_steps -= dropped;
    in.k = keep;
    ++in.epoch;
    push(in.started + static_cast<double>(keep) * in.step_s, Event::Kind::kStepEnd, index, 0);
  }

  // A length uniform on [lo, hi] (splitmix64: a fixed sequence, so the same
  // spec gives the same requests).
  std::int64_t draw(std::int64_t lo, std::int64_t hi) {
    if (hi <= lo) return hi;
    std::uint64_t z = (rng_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return lo + static_cast<std::int64_t>(z % static_cast<std::uint64_t>(hi - lo + 1));
  }

  // A client's next request. Aggregated: to its replica. Disaggregated: to a
  // decode instance, which takes its KV cache first and then hands the
  // prompt to a prefill worker (the decode-first flow of NVIDIA Dynamo and
  // TensorRT-LLM's disaggregated server), so a full decode pool delays the
  // first token, not the later ones.
  void send(std::int32_t client, double now) {
    auto& left = remaining_[static_cast<std::size_t>(client)];
    if (left == 0) return;
    --left;
    Request q;
    q.client = client;
    q.arrival = now;
    q.reply = now > 0;  // the benchmark's first requests go out together, not in reply
    const std::int32_t target =
        s_.decode ? pick_decode_instance() : client % first_count_;  // a client keeps its replica
    bool hit = false;
    if (s_.prompt_pool > 0) {
      q.prompt = static_cast<std::int32_t>(draw(0, s_.prompt_pool - 1));
      auto& length = pool_isl_[static_cast<std::size_t>(q.prompt)];
      if (length == 0) length = draw(isl_min_, s_.isl);
      q.isl = length;
      hit = found_in_cache(instances_[static_cast<std::size_t>(target)], q.prompt);
    } else {
      q.isl = draw(isl_min_, s_.isl);
    }
    q.osl = draw(osl_min_, s_.osl);
    q.own = q.isl - s_.cached_prefix;
    ++r_.prompts;
    if (hit) {
      // Only whole blocks are shared: the tokens past the last one (at
      // least one, the engine's sampling needs its logits) are computed.
      const std::int64_t b = instances_[static_cast<std::size_t>(target)].pool->kv_block_tokens;
      q.own = std::max<std::int64_t>(1, q.isl - (q.isl - 1) / b * b);
      ++r_.prefix_hits;
    }
    // The prefill's token, then enough decode steps for the other osl - 1.
    q.steps =
        1 + static_cast<std::int64_t>(std::ceil(static_cast<double>(q.osl - 1) / per_step_ - 1e-9));
    q.target = q.own;
    requests_.push_back(q);
    arrive(target, static_cast<std::int32_t>(requests_.size() - 1), now, Event::Kind::kArrival);
  }

  // Whether a prompt the instance kept is still in its prefix cache: with
  // the chance that the free KV cache holds every prompt it keeps (an LRU
  // cache under uniform popularity hits at capacity / working set).
  bool found_in_cache(const Instance& in, std::int32_t prompt) {
    if (!in.kept[static_cast<std::size_t>(prompt)]) return false;
    const double free = static_cast<double>(in.pool->kv_tokens) - in.kv_used;
    const double chance = in.kept_tokens > 0 ? std::clamp(free / in.kept_tokens, 0.0, 1.0) : 0.0;
    return uniform() < chance;
  }

  // Uniform on [0, 1) from the same fixed sequence as the lengths.
  double uniform() {
    return static_cast<double>(static_cast<std::uint64_t>(draw(0, (std::int64_t{1} << 53) - 1))) /
           9007199254740992.0;
  }

  void arrive(std::int32_t instance, std::int32_t request, double time, Event::Kind kind) {
    instances_[static_cast<std::size_t>(instance)].pending.insert(time);
    push(time, kind, instance, request);
  }

  // Output tokens of `steps` output steps.
  double tokens(std::int64_t steps) const { return per_step_ * static_cast<double>(steps); }

  // KV tokens a request takes when admitted.
  double admission_tokens(const PoolSpec& p, const Request& q) const {
    if (p.role == PoolSpec::Role::kPrefill) return static_cast<double>(q.own);
    if (p.reserve_whole) return static_cast<double>(q.own + q.osl);
    return p.role == PoolSpec::Role::kDecode
               ? static_cast<double>(q.own) + tokens(std::max<std::int64_t>(q.generated, 1))
               : static_cast<double>(q.target);
  }

  // `tokens` of cache rounded up to the pool's whole blocks.
  static double in_blocks(const PoolSpec& p, double tokens) {
    if (p.kv_block_tokens <= 1) return tokens;
    const auto b = static_cast<double>(p.kv_block_tokens);
    return std::ceil(tokens / b - 1e-9) * b;
  }

  // Tokens a decoding request holds under on-demand admission (its own part
  // of the prompt and its output).
  double held(const Instance& in, const Request& q) const {
    return static_cast<double>(q.own) + tokens(q.offset + in.decode_step);
  }

  void start_decoding(Instance& in, std::int32_t id) {
    Request& q = req(id);
    q.offset = q.generated - in.decode_step;
    in.decoding.emplace(q.steps - q.offset, id);
    in.by_order.emplace(q.order, id);
    in.context_offset += q.offset;
    in.context_isl += q.isl;
    if (in.pool->balance_groups > 0) ++in.group_decoding[static_cast<std::size_t>(q.group)];
    in.joined.push_back(id);
  }

  void stop_decoding(Instance& in, Request& q, std::int32_t id) {
    const auto was_joined = std::find(in.joined.begin(), in.joined.end(), id);
    if (was_joined != in.joined.end()) {
      in.joined.erase(was_joined);  // no decode run yet: its last token stays its own
    } else {
      q.last_token = in.last_decode_end;
    }
    in.decoding.erase({q.steps - q.offset, id});
    in.by_order.erase({q.order, id});
    in.context_offset -= q.offset;
    in.context_isl -= q.isl;
    if (in.pool->balance_groups > 0) --in.group_decoding[static_cast<std::size_t>(q.group)];
  }

  // The gaps between streamed tokens the run that ended now gave its
  // decoding requests (one a step each: a step's tokens stream together):
  // from each one's last token to the run's first step end, then a step's
  // length (a benchmark's inter-token latencies, vLLM's ITL).
  void record_gaps(Instance& in, double now) {
    const double first_end = in.started + in.step_s;
    for (const std::int32_t id : in.run_joined)
      r_.token_gaps.emplace_back(first_end - req(id).last_token, 1);
    const auto through = in.decode_now - static_cast<std::int64_t>(in.run_joined.size());
    if (through > 0) r_.token_gaps.emplace_back(first_end - in.last_decode_end, through);
    if (in.k > 1) r_.token_gaps.emplace_back(in.step_s, in.decode_now * (in.k - 1));
    in.run_joined.clear();
    in.last_decode_end = now;
  }

  // A request leaves the instance's running set (finished or preempted).
  static void release(Instance& in, const Request& q) {
    --in.running;
    if (in.pool->balance_groups > 0) --in.group_running[static_cast<std::size_t>(q.group)];
  }

  // On-demand caches grow a token a step; preempt the newest decoding
  // requests until the coming step fits. True when one was preempted.
  bool make_room(Instance& in) {
    const PoolSpec& p = *in.pool;
    bool preempted = false;
    while (in.decoding.size() > 1 &&
           in.kv_used + tokens(static_cast<std::int64_t>(in.decoding.size())) >
               static_cast<double>(p.kv_tokens)) {
      const std::int32_t id = std::prev(in.by_order.end())->second;
      Request& q = req(id);
      stop_decoding(in, q, id);
      in.kv_used -= held(in, q) + q.slack;
      q.generated = q.offset + in.decode_step;
      release(in, q);
      if (p.role == PoolSpec::Role::kDecode) {
        q.target = 0;  // its cache came over once; taken as moved back in
      } else {
        q.target = q.own + std::llround(tokens(q.generated));  // recomputed from the start
        q.prefilled = 0;
      }
      in.waiting.push_front(id);
      ++r_.preemptions;
      preempted = true;
    }
    return preempted;
  }

  // Whether `q` had queued when the coming step's batch was formed: before
  // the cutoff, or at it unless sent in reply to a response given then.
  static bool formed_in_time(const Instance& in, const Request& q) {
    return q.queued < in.cutoff || (q.queued == in.cutoff && (!q.reply || in.ties_in));
  }

  // The front of `queue` when the cutoff held it back, else null.
  const Request* held_front(const Instance& in, const std::deque<std::int32_t>& queue) {
    if (queue.empty()) return nullptr;
    const Request& q = req(queue.front());
    return formed_in_time(in, q) ? nullptr : &q;
  }

  // A receive interval: the engine's intake at the start of a step. The steps
  // since the last intake add their weight; at the interval (or from an idle
  // loop, which spins through it at once) it takes in the requests that had
  // arrived when this step's batch was formed.
  void take_in(Instance& in, bool at_once) {
    const PoolSpec& p = *in.pool;
    in.recv_counter += in.recv_weight;
    in.recv_weight = 0;
    if (!at_once && in.recv_counter < p.recv_interval) return;
    in.recv_counter = 0;
    std::deque<std::int32_t> later;
    for (std::int32_t id : in.inbox) {
      Request& q = req(id);
      if (at_once || formed_in_time(in, q)) {
        in.fresh.push_back(id);
        in.waiting.push_back(id);
      } else {
        later.push_back(id);
      }
    }
    in.inbox.swap(later);
  }

  // Attention-DP balance (TensorRT-LLM's PyExecutor._balance_adp_requests,
  // which runs every step, prompts or not): whether the coming step holds its
  // prompts back. Moves the counts and sets how the step counts.
  bool balance_holds(Instance& in) {
    const PoolSpec& p = *in.pool;
    const std::int64_t share = (p.max_running + p.balance_groups - 1) / p.balance_groups;
    bool every_prompt = true, every_decoding = true, room = true;
    for (std::size_t g = 0; g < in.group_running.size(); ++g) {
      every_prompt = every_prompt && in.group_prefilling[g] > 0;
      every_decoding = every_decoding && in.group_decoding[g] > 0;
      room = room && in.group_decoding[g] < share;
    }
    if (every_prompt && room) {
      in.balance_count = 0;
      in.balance_run = Instance::BalanceRun::kAllReady;
      // TensorRT-LLM touches the batching count only while every rank decodes.
      if (!every_decoding) return false;
      if (in.batching_count < p.balance_batching) {
        ++in.batching_count;
        in.balance_run = Instance::BalanceRun::kBatching;
        return true;
      }
      in.batching_count = 0;
      return false;
    }
    if (!every_decoding) {
      in.balance_count = 0;
      in.balance_run = Instance::BalanceRun::kReleased;
      return false;
    }
    in.balance_run = Instance::BalanceRun::kCounting;
    if (++in.balance_count < p.balance_timeout) return true;
    in.balance_count = 0;
    return false;
  }

  void start_step(std::int32_t index, double now) {
    Instance& in = instances_[static_cast<std::size_t>(index)];
    const PoolSpec& p = *in.pool;
    if (p.recv_interval > 1) take_in(in, in.from_idle);
    // The engine's loop takes in what has queued as a step starts (SGLang's
    // recv_requests, vLLM's and TensorRT-LLM's request queues alike).
    for (std::int32_t id : in.fresh) req(id).received = now;
    in.fresh.clear();
    const bool preempted = !p.reserve_whole && make_room(in);
    // Admission in arrival order while the cap and the cache allow (none in
    // a step that had to preempt, as vLLM does).
    while (!preempted && !in.waiting.empty() && in.running < p.max_running) {
      const std::int32_t id = in.waiting.front();
      Request& q = req(id);
      if (!formed_in_time(in, q)) break;
      const double need = in_blocks(p, admission_tokens(p, q));
      // Decode tokens need room in the coming step too.
      const double growth = p.reserve_whole || p.role == PoolSpec::Role::kPrefill
                                ? 0
                                : tokens(static_cast<std::int64_t>(in.decoding.size()) + 1);
      if (in.running > 0 && in.kv_used + need + growth > static_cast<double>(p.kv_tokens)) break;
      in.waiting.pop_front();
      q.reply = false;  // a later queue (a prefill worker's, after a preemption) is no reply
      if (q.admitted < 0) q.admitted = now;
      q.order = order_++;
      ++in.running;
      if (p.balance_groups > 0) {
        // The group running the fewest takes it (TensorRT-LLM spreads new
        // requests over the attention-DP ranks by their active requests).
        const auto fewest = std::min_element(in.group_running.begin(), in.group_running.end());
        q.group = static_cast<std::int32_t>(fewest - in.group_running.begin());
        ++*fewest;
        ++in.group_prefilling[static_cast<std::size_t>(q.group)];
      }
      // A prefill worker's rounding is its own (released with the prompt);
      // the request's slack is the pool that keeps its cache.
      if (p.role != PoolSpec::Role::kPrefill) q.slack = need - admission_tokens(p, q);
      in.kv_used += need;
      if (p.role != PoolSpec::Role::kDecode) {
        in.prefilling.push_back(id);
      } else if (q.generated > 0) {
        start_decoding(in, id);  // back after a preemption, its cache moved in again
      } else {
        q.home = index;  // its cache is held here; the prompt goes to a prefill worker
        arrive(next_prefill_, id, now, Event::Kind::kArrival);
        next_prefill_ = (next_prefill_ + 1) % first_count_;
      }
    }
    while (!in.ready.empty() && formed_in_time(in, req(in.ready.front()))) {
      start_decoding(in, in.ready.front());  // with the prefill worker's first token
      in.ready.pop_front();
    }
    // Requests the cutoff held back join the next step, or the one after.
    const Request* held_waiting = held_front(in, in.waiting);
    const Request* held_ready = held_front(in, in.ready);
    const bool held_back = held_waiting != nullptr || held_ready != nullptr;
    const bool from_idle = in.from_idle;
    in.from_idle = false;
    const auto decoding = static_cast<std::int64_t>(in.decoding.size());
    in.chunks.clear();
    std::int64_t prompt_tokens = 0;
    bool decode_paused = false;
    if (!in.prefilling.empty()) {
      decode_paused = p.prefill_first;
      std::int64_t budget = decode_paused ? p.token_budget : p.token_budget - decoding;
      budget = std::max<std::int64_t>(budget, 0);
      for (std::int32_t id : in.prefilling) {
        const Request& q = req(id);
        const std::int64_t left = q.target - q.prefilled;
        std::int64_t take = 0;
        if (p.chunked_prefill) {
          take = std::min(left, budget);
          if (p.chunk_cap > 0) take = std::min(take, p.chunk_cap);
        } else if (left <= budget || in.chunks.empty()) {
          // One whole prompt a step even past the budget: a deployment
          // without chunking must size its budget above a prompt and the
          // batch's decode tokens, or prompts would wait for every decode.
          take = left;
        }
        if (take <= 0) break;
        in.chunks.emplace_back(id, take);
        prompt_tokens += take;
        budget -= take;
        if (budget <= 0) break;
      }
    }
    const bool balance_hold = p.balance_groups > 0 && balance_holds(in);
    if (p.balance_groups > 0) in.balance_held = balance_hold && !in.chunks.empty();
    if (balance_hold) {
      in.chunks.clear();
      prompt_tokens = 0;
    }
    // Batch waiting: chunks beside decode tokens wait for a fuller step, at
    // most wait_steps steps in a row (TensorRT-LLM's PyExecutor._waiting_requests,
    // which counts a step's chunk tokens and its decode requests' tokens).
    bool waiting = false;
    if (p.wait_steps > 0 && !in.chunks.empty() && !decode_paused && decoding > 0) {
      const double step_tokens =
          static_cast<double>(prompt_tokens + (decoding + in.finished) * p.decode_tokens);
      if (in.waits < p.wait_steps &&
          step_tokens < p.wait_ratio * static_cast<double>(p.token_budget)) {
        waiting = true;
        in.chunks.clear();
        prompt_tokens = 0;
      } else {
        in.waits = 0;
      }
    }
    const std::int64_t decode_now = decode_paused ? 0 : decoding;
    if (decode_now > 0) {
      in.run_joined.swap(in.joined);  // every request decoding rides in this run
      in.joined.clear();
    }
    // The requests that finished with the last step ride along (a batch formed
    // a step ahead), unless the step is a prefill batch apart.
    const std::int64_t gone = decode_paused ? 0 : in.finished;
    const double gone_context = in.finished_context;
    in.finished = 0;
    in.finished_context = 0;
    if (prompt_tokens == 0 && decode_now == 0 && gone == 0) {
      // The batch formed ahead came out empty: the engine's loop goes round
      // at once and takes what has queued since (and an idle loop spins
      // through a receive interval at once).
      if (held_back || !in.inbox.empty()) {
        in.cutoff = std::numeric_limits<double>::infinity();
        in.from_idle = true;
        start_step(index, now);
      }
      return;  // idle until an arrival
    }

    const double decode_context = decode_now > 0
                                      ? (static_cast<double>(in.context_isl) +
                                         tokens(decode_now * in.decode_step + in.context_offset)) /
                                            static_cast<double>(decode_now)
                                      : 0;
    const double context = gone > 0
                               ? (decode_context * static_cast<double>(decode_now) + gone_context) /
                                     static_cast<double>(decode_now + gone)
                               : decode_context;
    std::int64_t k = 1;
    double step_s = p.cost(decode_now + gone, context, prompt_tokens);
    double lead = 0;  // what the finished requests riding along add to the first step
    if (prompt_tokens == 0 && decode_now > 0) {
      // Pure decoding: nothing changes until the next completion, until the
      // cache runs out, or until an arrival, which joins after its step. The
      // run's steps are alike but its first, which finished requests may lengthen.
      if (gone > 0) {
        const double alone = p.cost(decode_now, decode_context, 0);
        lead = std::max(0.0, step_s - alone);
        step_s = alone;
      }
      k = std::max<std::int64_t>(1, in.decoding.begin()->first - in.decode_step);
      // A wait lasts until the count runs out (or an arrival or completion).
      if (waiting) k = std::min(k, p.wait_steps - in.waits);
      // Prompts held for the balance wait until its count takes them.
      if (balance_hold && !in.prefilling.empty()) {
        k = std::min(k, in.balance_run == Instance::BalanceRun::kBatching
                            ? std::max<std::int64_t>(1, p.balance_batching - in.batching_count + 1)
                            : std::max<std::int64_t>(1, p.balance_timeout - in.balance_count));
      }
      if (!p.reserve_whole) {
        const double room = (static_cast<double>(p.kv_tokens) - in.kv_used) / tokens(decode_now);
        k = std::clamp<std::int64_t>(static_cast<std::int64_t>(std::floor(std::max(room, 0.0))), 1,
                                     k);
      }
      if (p.recv_interval > 1) {
        // Arrivals wait in the inbox: the run ends at the next intake while any
        // is there or on its way.
        if (!in.inbox.empty() || !in.pending.empty())
          k = std::min(k, std::max<std::int64_t>(1, p.recv_interval - in.recv_counter));
      } else if (!in.pending.empty() && step_s > 0) {
        // An arrival joins the step after its own (after the next when
        // batches are formed a step ahead).
        const double steps_to_arrival = std::floor((*in.pending.begin() - now - lead) / step_s) +
                                        1 + (p.formed_a_step_ahead ? 1 : 0);
        k = std::clamp<std::int64_t>(static_cast<std::int64_t>(std::min(steps_to_arrival, 1e15)), 1,
                                     k);
      }
      if (held_back) {
        // Whether the batch formed as this step starts takes a held-back front.
        const auto taken = [&](const Request* q) {
          return q != nullptr &&
                 (q->queued < now || (q->queued == now && (!q->reply || from_idle)));
        };
        k = std::min<std::int64_t>(k, taken(held_waiting) || taken(held_ready) ? 1 : 2);
      }
      if (k > 1) step_s = p.cost(decode_now, decode_context + 0.5 * tokens(k - 1), 0);
    }
    // The intake weight of this step (SGLang's recv skipper: a decode step 1,
    // any step with prompt tokens 1,000).
    in.recv_weight = prompt_tokens > 0 ? 1000 : k;
    in.waiting_run = waiting;
    if (waiting) {
      in.waits += k;
      r_.waited_steps += k;
    }
    if (in.balance_held) r_.balance_held_steps += k;
    in.busy = true;
    in.ties_in = from_idle;  // kept for the cutoff this step sets
    in.k = k;
    in.decode_now = decode_now;
    in.begun = now;
    in.started = now + lead;  // step j of the run ends at started + j step_s
    in.step_s = step_s;
    const double kd = static_cast<double>(k);
    r_.steps += k;
    r_.busy_s += kd * step_s + lead;
    r_.decoding_step_sum += kd * static_cast<double>(decode_now);
    if (decode_now > 0) r_.decode_steps += k;
    if (p.role == PoolSpec::Role::kPrefill) r_.prefill_pool_busy_s += kd * step_s;
    if (prompt_tokens > 0) {
      ++r_.prompt_steps;
      r_.prefill_added_s += decode_now + gone > 0
                                ? std::max(0.0, step_s - p.cost(decode_now + gone, context, 0))
                                : step_s;
    }
    push(in.started + kd * step_s, Event::Kind::kStepEnd, index, 0);
  }

  void finish_step(std::int32_t index, double now) {
    Instance& in = instances_[static_cast<std::size_t>(index)];
    const PoolSpec& p = *in.pool;
    in.busy = false;
    if (in.decode_now > 0) record_gaps(in, now);
    // The next batch was formed as the last step of this run started.
    in.cutoff = !p.formed_a_step_ahead ? std::numeric_limits<double>::infinity()
                : in.k == 1            ? in.begun
                                       : in.started + static_cast<double>(in.k - 1) * in.step_s;
    in.ties_in = in.ties_in && in.k == 1;
    if (in.decode_now > 0) in.decode_step += in.k;
    if (p.balance_groups > 0 && in.k > 1) {
      // The run's later steps counted as its first did (start_step).
      if (in.balance_run == Instance::BalanceRun::kCounting && p.balance_timeout > 0) {
        in.balance_count = (in.balance_count + in.k - 1) % p.balance_timeout;
      } else if (in.balance_run == Instance::BalanceRun::kBatching) {
        in.batching_count += in.k - 1;
      }
    }
    if (!p.reserve_whole) in.kv_used += tokens(in.decode_now * in.k);  // each decode step's cache
    std::int64_t finished = 0;  // requests that completed with this step
    double finished_context = 0;
    const auto count_finished = [&](const Request& q) {
      finished_context += static_cast<double>(q.isl) + tokens(q.steps);
      ++finished;
    };
    for (const auto& [id, take] : in.chunks) {
      Request& q = req(id);
      if (q.first_chunk < 0) q.first_chunk = in.begun;
      q.prefilled += take;
      if (q.prefilled < q.target) continue;
      // Chunks are taken in order, so the finished prompts lead the queue.
      in.prefilling.pop_front();
      if (p.balance_groups > 0) --in.group_prefilling[static_cast<std::size_t>(q.group)];
      if (q.first_token < 0) q.first_token = now;
      q.last_token = now;
      ++q.generated;  // a prefill samples the next token
      if (q.prompt >= 0 && p.role == PoolSpec::Role::kMixed) {
        const auto slot = static_cast<std::size_t>(q.prompt);
        if (!in.kept[slot]) {
          in.kept[slot] = true;
          in.kept_tokens += static_cast<double>(q.isl);
        }
      }
      if (p.role == PoolSpec::Role::kPrefill) {
        release(in, q);
        in.kv_used -= in_blocks(p, static_cast<double>(q.own));
        q.target = 0;
        arrive(q.home, id, now + s_.transfer_s, Event::Kind::kReady);
      } else if (q.generated >= q.steps) {
        release(in, q);
        in.kv_used -= admission_tokens(p, q) + q.slack;
        count_finished(q);
        complete(id, now);
      } else {
        if (!p.reserve_whole) in.kv_used += tokens(1);  // the first output step's cache
        start_decoding(in, id);
      }
    }
    while (!in.decoding.empty() && in.decoding.begin()->first <= in.decode_step) {
      const std::int32_t id = in.decoding.begin()->second;
      Request& q = req(id);
      stop_decoding(in, q, id);
      in.kv_used -= (p.reserve_whole ? static_cast<double>(q.own + q.osl) : held(in, q)) + q.slack;
      release(in, q);
      count_finished(q);
      complete(id, now);
    }
    if (p.formed_a_step_ahead && p.role != PoolSpec::Role::kPrefill) {
      in.finished = finished;
      in.finished_context = finished_context;
    }
    start_step(index, now);
  }

  std::int32_t pick_decode_instance() const {
    std::int32_t best = first_count_;
    std::int64_t least = std::numeric_limits<std::int64_t>::max();
    for (std::size_t i = static_cast<std::size_t>(first_count_); i < instances_.size(); ++i) {
      const Instance& in = instances_[i];
      const auto load =
          in.running + static_cast<std::int64_t>(in.waiting.size() + in.pending.size());
      if (load < least) {
        least = load;
        best = static_cast<std::int32_t>(i);
      }
    }
    return best;
  }

  void complete(std::int32_t id, double now) {
    const Request& q = req(id);
    r_.ttft_s.push_back(q.first_token - q.arrival);
    r_.e2e_s.push_back(now - q.arrival);
    if (q.osl > 1) {
      r_.tpot_s.push_back((now - q.first_token) / static_cast<double>(q.osl - 1));
    } else if (osl_min_ == s_.osl) {
      r_.tpot_s.push_back(0);  // every request has one output token
    }
    r_.output_tokens += q.osl;
    r_.duration_s = std::max(r_.duration_s, now);
    send(q.client, now);
  }

  const SimSpec& s_;
  const double per_step_;                 // output tokens a step yields
  const std::int64_t isl_min_, osl_min_;  // the shortest lengths drawn
  std::uint64_t rng_ = 0x5EED5EED5EED5EEDULL;
  std::vector<std::int64_t> pool_isl_;  // a prompt pool's lengths, drawn on first use (0: not yet)
  std::vector<Instance> instances_;
  std::int32_t first_count_ = 0, next_prefill_ = 0;
  std::vector<Request> requests_;
  std::vector<std::int64_t> remaining_;  // requests each client has still to send
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  std::uint64_t seq_ = 0, order_ = 0;
  SimResult r_;
};

void check_pool(const PoolSpec& p, const char* name, std::int64_t one_request) {
  if (p.instances < 1 || p.max_running < 1 || p.token_budget < 1 || !p.cost ||
      p.kv_block_tokens < 1 || p.kv_block_tokens > 1024) {
    throw InvalidArgument(std::string("serving simulation: the ") + name +
                          " pool needs instances, a running cap, a token budget, a step cost "
                          "and KV blocks of 1 to 1024 tokens");
  }
  if (p.wait_steps < 0 || p.wait_steps > (std::int64_t{1} << 20) ||
      !(p.wait_ratio >= 0 && p.wait_ratio <= 1) || p.decode_tokens < 1 ||
      p.decode_tokens > (std::int64_t{1} << 10) ||
      (p.wait_steps > 0 && p.role != PoolSpec::Role::kMixed)) {
    throw InvalidArgument(std::string("serving simulation: the ") + name +
                          " pool's batch waiting needs 0 to 2^20 waits, a ratio from 0 to 1, 1 "
                          "to 1024 tokens a decoding request, and a pool that mixes prompts "
                          "and decode tokens");
  }
  if (p.recv_interval < 0 || p.recv_interval > (std::int64_t{1} << 20) ||
      (p.recv_interval > 1 && p.role != PoolSpec::Role::kMixed)) {
    throw InvalidArgument(std::string("serving simulation: the ") + name +
                          " pool's receive interval needs 0 to 2^20 steps and a pool that "
                          "mixes prompts and decode tokens");
  }
  if (p.chunk_cap < 0 || p.balance_groups < 0 || p.balance_groups > (std::int64_t{1} << 16) ||
      p.balance_timeout < 0 || p.balance_timeout > (std::int64_t{1} << 20) ||
      p.balance_batching < 0 || p.balance_batching > (std::int64_t{1} << 20) ||
      (p.balance_groups > 0 && (p.role != PoolSpec::Role::kMixed || p.prefill_first))) {
    throw InvalidArgument(std::string("serving simulation: the ") + name +
                          " pool's attention-DP balance needs 0 to 65,536 groups, 0 to 2^20 "
                          "steps of timeout and of batching wait, and a pool whose steps mix "
                          "prompts and decode tokens (a non-negative chunk cap)");
  }
  const std::int64_t b = p.kv_block_tokens;
  if (p.kv_tokens < (one_request + b - 1) / b * b) {
    throw InvalidArgument(std::string("serving simulation: the ") + name +
                          " pool's KV cache cannot hold one request");
  }
}

}  // namespace

SimResult simulate_serving(const SimSpec& s) {
  const std::int64_t shortest_prompt = s.isl_min > 0 ? s.isl_min : s.isl;
  if (s.isl < 1 || s.osl < 1 || s.clients < 1 || s.requests_per_client < 1 ||
      s.clients * s.requests_per_client > (std::int64_t{1} << 24) || !(s.transfer_s >= 0) ||
      !(s.tokens_per_step >= 1 && s.tokens_per_step <= 1e6) || s.cached_prefix < 0 ||
      s.isl_min < 0 || s.isl_min > s.isl || s.osl_min < 0 || s.osl_min > s.osl ||
      s.cached_prefix >= shortest_prompt || s.prompt_pool < 0 ||
      s.prompt_pool > (std::int64_t{1} << 20)) {
    throw InvalidArgument("serving simulation: sizes out of range");
  }
  if (s.prompt_pool > 0 && s.decode) {
    throw InvalidArgument("serving simulation: a prompt pool is modeled for aggregated pools only");
  }
  if (s.decode) {
    check_pool(s.first, "prefill", s.isl - s.cached_prefix);
    check_pool(*s.decode, "decode", s.isl - s.cached_prefix + s.osl);
    if (s.first.role != PoolSpec::Role::kPrefill || s.decode->role != PoolSpec::Role::kDecode)
      throw InvalidArgument("serving simulation: a decode pool needs a prefill pool first");
  } else {
    check_pool(s.first, "first", s.isl - s.cached_prefix + s.osl);
    if (s.first.role != PoolSpec::Role::kMixed)
      throw InvalidArgument("serving simulation: one pool must serve prefill and decode");
  }
  return Simulation(s).run();
}

}  // namespace roofline::detail
