// Steps on a node in another process (node_actor's record, replay and release; docs/replay.md):
// the owner records a step of named work on its buffers, replays it (and with a binding to
// another of its buffers) and releases it; a stranger, a guest, a step naming another's
// buffers, a binding to a buffer that is not the owner's and a step the node never recorded
// for the owner are refused in words; the node keeps at most cudactor.node.max-steps, and the
// owner's steps are released at the coordinator when it goes (the next owner records as many
// again, on a coordinator that keeps no more than that).
#define BOOST_TEST_MODULE remote_steps
#include <boost/test/unit_test.hpp>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/remote_node.hpp"
#include "cudactor/actors/node_client.hpp"
#include "cudactor/messaging/errc.hpp"

using namespace cudactor;
using namespace cudactor::test;
using namespace std::chrono_literals;

namespace {

constexpr std::size_t floats = 64;

struct owner_of {
  explicit owner_of(std::uint16_t port) {
    auto reached = connect_node(cp.system, "127.0.0.1", port, connect_limit());
    BOOST_REQUIRE_MESSAGE(reached, cp.why(reached));
    node = std::move(*reached);
    // A control plane that owned the node just before may not be seen gone yet.
    auto claimed = cp.ask<bool>(node->actor, claim_atom::value, std::string{});
    for (int i = 0;
         i < 100 && !claimed && cp.why(claimed).find("another control plane") != std::string::npos;
         ++i) {
      std::this_thread::sleep_for(100ms);
      claimed = cp.ask<bool>(node->actor, claim_atom::value, std::string{});
    }
    BOOST_REQUIRE_MESSAGE(claimed, cp.why(claimed));
  }
  buffer_id allocate(float value) {
    auto h = cp.ask<buffer_handle>(node->actor, alloc_atom::value,
                                   buffer_call::alloc(floats * sizeof(float)));
    BOOST_REQUIRE_MESSAGE(h, cp.why(h));
    std::vector<float> values(floats, value);
    std::vector<std::uint8_t> bytes(floats * sizeof(float));
    std::memcpy(bytes.data(), values.data(), bytes.size());
    auto stored =
        cp.ask<op_notice>(node->actor, store_atom::value, buffer_call::store(h->id, 0, bytes));
    BOOST_REQUIRE_MESSAGE(stored && stored->state == op_state::completed, cp.why(stored));
    return h->id;
  }
  float first(buffer_id b) {
    auto bytes = cp.ask<std::vector<std::uint8_t>>(node->actor, fetch_atom::value,
                                                   buffer_call::fetch(b, 0, sizeof(float)));
    BOOST_REQUIRE_MESSAGE(bytes && bytes->size() == sizeof(float), cp.why(bytes));
    float f = 0;
    std::memcpy(&f, bytes->data(), sizeof f);
    return f;
  }
  caf::expected<step_handle> record(graph_spec g, std::string name = "remote step") {
    return cp.ask<step_handle>(node->actor, record_atom::value,
                               step_spec{std::move(name), std::move(g)});
  }
  caf::expected<step_outcome> replay(step_handle h, std::vector<buffer_binding> bindings = {}) {
    return cp.ask<step_outcome>(node->actor, replay_atom::value,
                                replay_request{h, std::move(bindings), step_notices::all});
  }
  control_plane cp;
  std::optional<remote_node> node;
};

// x *= factor, in place: the node's "scale" on one buffer.
graph_spec doubling(buffer_id b) {
  graph_spec g;
  op_spec s = named("double", work::named("scale", 2.0f));
  s.uses = {buffer_use::read_write(b)};
  g.add(std::move(s));
  op_spec again = named("double again", work::named("scale", 2.0f));
  again.uses = {buffer_use::read_write(b)};
  g.add(std::move(again));
  return g;
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_owner_records_replays_rebinds_and_releases_a_step_on_a_node) {
  node_process process{"steps"};
  BOOST_REQUIRE_MESSAGE(process.port != 0, "no port printed: " << read_file(process.log));
  owner_of owner{process.port};
  const buffer_id a = owner.allocate(1.0f), b = owner.allocate(3.0f);
  auto h = owner.record(doubling(a));
  BOOST_REQUIRE_MESSAGE(h, owner.cp.why(h));
  for (int k = 1; k <= 2; ++k) {
    auto out = owner.replay(*h);
    BOOST_REQUIRE_MESSAGE(out, owner.cp.why(out));
    BOOST_TEST((out->state == op_state::completed), owner.cp.render(out->cause));
    BOOST_TEST(out->ops.size() == 2u);
  }
  BOOST_TEST(owner.first(a) == 16.0f);  // four doublings
  auto bound = owner.replay(*h, {{a, b}});
  BOOST_REQUIRE_MESSAGE(bound, owner.cp.why(bound));
  BOOST_TEST((bound->state == op_state::completed), owner.cp.render(bound->cause));
  BOOST_TEST(owner.first(b) == 12.0f);
  BOOST_TEST(owner.first(a) == 16.0f);
  // A failing operation of the step is named in the outcome, across the wire.
  graph_spec failing;
  failing.add(named("the failing one", work::named("fail", std::string{"as asked"})));
  auto f = owner.record(std::move(failing));
  if (on_cuda()) {
    // Its work runs while captured, at record (the node's steps are CUDA graphs there): the
    // record is refused, naming it.
    BOOST_REQUIRE_MESSAGE(!f, "a step whose work fails was recorded as a CUDA graph");
    const std::string words = owner.cp.why(f);
    BOOST_TEST(words.find("'the failing one'") != std::string::npos, words);
    BOOST_TEST(words.find("as asked") != std::string::npos, words);
  } else {
    BOOST_REQUIRE_MESSAGE(f, owner.cp.why(f));
    auto failed = owner.replay(*f);
    BOOST_REQUIRE_MESSAGE(failed, owner.cp.why(failed));
    BOOST_TEST((failed->state == op_state::failed));
    BOOST_TEST(owner.cp.render(failed->cause).find("'the failing one'") != std::string::npos,
               owner.cp.render(failed->cause));
  }
  // Released: replays of it are refused, and a second release says there was none.
  auto released = owner.cp.ask<bool>(owner.node->actor, release_atom::value, *h);
  BOOST_REQUIRE_MESSAGE(released, owner.cp.why(released));
  BOOST_TEST(*released);
  auto again = owner.cp.ask<bool>(owner.node->actor, release_atom::value, *h);
  BOOST_REQUIRE(again);
  BOOST_TEST(!*again);
  auto gone = owner.replay(*h);
  BOOST_REQUIRE(!gone);
  BOOST_TEST(is(gone.error(), errc::invalid_argument), owner.cp.why(gone));
  BOOST_TEST(
      owner.cp.why(gone).find("is not a step the owner recorded on this node") != std::string::npos,
      owner.cp.why(gone));
}

BOOST_AUTO_TEST_CASE(what_is_not_the_owners_or_cannot_run_is_refused_in_words) {
  const std::string token = "0123456789abcdef-the-owner";
  const std::string guest_token = "0123456789abcdef-a-guest";
  node_process process{"guarded", {"--cudactor.node.owner-token=" + token}};
  BOOST_REQUIRE_MESSAGE(process.port != 0, "no port printed: " << read_file(process.log));
  control_plane cp;
  auto mine = connect_node(cp.system, "127.0.0.1", process.port, connect_limit());
  BOOST_REQUIRE_MESSAGE(mine, cp.why(mine));
  BOOST_REQUIRE(cp.ask<bool>(mine->actor, claim_atom::value, token));
  auto h = cp.ask<buffer_handle>(mine->actor, alloc_atom::value, buffer_call::alloc(256, token));
  BOOST_REQUIRE_MESSAGE(h, cp.why(h));
  auto step =
      cp.ask<step_handle>(mine->actor, record_atom::value, step_spec{"mine", doubling(h->id)});
  BOOST_REQUIRE_MESSAGE(step, cp.why(step));
  const auto words = [&](const caf::error& e) { return cp.render(e); };
  // Unknown work, and a name past the node's limit: refused by the face, named.
  graph_spec unknown;
  unknown.add(named("x", work::named("no such operation")));
  auto bad = cp.ask<step_handle>(mine->actor, record_atom::value, step_spec{"", unknown});
  BOOST_REQUIRE(!bad);
  BOOST_TEST(is(bad.error(), errc::unknown_operation), words(bad.error()));
  auto long_name = cp.ask<step_handle>(mine->actor, record_atom::value,
                                       step_spec{std::string(300, 'n'), doubling(h->id)});
  BOOST_REQUIRE(!long_name);
  BOOST_TEST(is(long_name.error(), errc::invalid_argument), words(long_name.error()));
  // A buffer that is not the owner's, in a step and in a binding.
  buffer_id foreign = h->id;
  foreign.slot += 1000;
  auto named_foreign =
      cp.ask<step_handle>(mine->actor, record_atom::value, step_spec{"", doubling(foreign)});
  BOOST_REQUIRE(!named_foreign);
  BOOST_TEST(words(named_foreign.error()).find("is not a buffer of this node's owner") !=
                 std::string::npos,
             words(named_foreign.error()));
  auto bound_foreign = cp.ask<step_outcome>(mine->actor, replay_atom::value,
                                            replay_request{*step, {{h->id, foreign}}, {}});
  BOOST_REQUIRE(!bound_foreign);
  BOOST_TEST(words(bound_foreign.error()).find("binding 0") != std::string::npos,
             words(bound_foreign.error()));
  // A guest the owner admitted hands the node named work, not steps; a stranger nothing.
  BOOST_REQUIRE(cp.ask<bool>(mine->actor, admit_atom::value,
                             guest_call{token, guest_token, 8, std::chrono::seconds{5}}));
  control_plane guest;
  auto theirs = connect_node(guest.system, "127.0.0.1", process.port, connect_limit());
  BOOST_REQUIRE_MESSAGE(theirs, guest.why(theirs));
  BOOST_REQUIRE(guest.ask<bool>(theirs->actor, claim_atom::value, guest_token));
  graph_spec plain;
  plain.add(named("plain", work::named("noop")));
  auto by_guest = guest.ask<step_handle>(theirs->actor, record_atom::value, step_spec{"", plain});
  BOOST_REQUIRE(!by_guest);
  BOOST_TEST(is(by_guest.error(), errc::permission_denied), guest.why(by_guest));
  auto guest_replay =
      guest.ask<step_outcome>(theirs->actor, replay_atom::value, replay_request{*step, {}, {}});
  BOOST_REQUIRE(!guest_replay);
  BOOST_TEST(is(guest_replay.error(), errc::permission_denied), guest.why(guest_replay));
  auto guest_release = guest.ask<bool>(theirs->actor, release_atom::value, *step);
  BOOST_REQUIRE(!guest_release);
  BOOST_TEST(is(guest_release.error(), errc::permission_denied), guest.why(guest_release));
  // The owner's step is untouched by all that.
  auto out = cp.ask<step_outcome>(mine->actor, replay_atom::value, replay_request{*step, {}, {}});
  BOOST_REQUIRE_MESSAGE(out, cp.why(out));
  BOOST_TEST((out->state == op_state::completed), cp.render(out->cause));
}

BOOST_AUTO_TEST_CASE(steps_are_bounded_and_released_at_the_coordinator_when_the_owner_goes) {
  // The node keeps 2 for its owner, its coordinator no more than 2: a step not released at the
  // coordinator when its owner went would leave the next owner no room there.
  node_process process{"bounded",
                       {"--cudactor.node.max-steps=2", "--cudactor.coordinator.max-steps=2"}};
  BOOST_REQUIRE_MESSAGE(process.port != 0, "no port printed: " << read_file(process.log));
  for (int owner_round = 0; owner_round < 2; ++owner_round) {
    owner_of owner{process.port};
    graph_spec g;
    g.add(named("noop", work::named("noop")));
    for (int i = 0; i < 2; ++i) {
      auto h = owner.record(g);
      BOOST_REQUIRE_MESSAGE(h, "owner " << owner_round << " step " << i << ": " << owner.cp.why(h));
      auto out = owner.replay(*h);
      BOOST_REQUIRE_MESSAGE(out, owner.cp.why(out));
    }
    auto third = owner.record(g);
    BOOST_REQUIRE(!third);
    BOOST_TEST(is(third.error(), errc::resource_exhausted), owner.cp.why(third));
    // The node's own bound, not the coordinator's (which says "the most the coordinator keeps").
    BOOST_TEST(owner.cp.why(third).find("recorded or being recorded, the most this node keeps") !=
                   std::string::npos,
               owner.cp.why(third));
  }  // each owner's process (its actor system) goes: the node forgets and releases its steps
}

BOOST_AUTO_TEST_CASE(a_departed_owners_queued_replays_are_cancelled) {
  // 16 replays of a 3 s step queued behind each other (one stream, one operation in flight on
  // it): once the owner is gone, the next control plane's operation waits for the replay on
  // the stream (3 s), not for 15 more behind it (45 s, past the 20 s its request waits).
  node_process process{"replays", {"--cudactor.streams=1", "--cudactor.max-in-flight=1"}};
  BOOST_REQUIRE_MESSAGE(process.port != 0, "no port printed: " << read_file(process.log));
  {
    owner_of owner{process.port};
    graph_spec g;
    // Stretched like the request's limit in a sanitized build, so that 15 waits still pass it.
    g.add(named("slow", work::named("busy", static_cast<std::uint64_t>(scaled(3s) / 1us))));
    auto h = owner.record(std::move(g));
    BOOST_REQUIRE_MESSAGE(h, owner.cp.why(h));
    caf::scoped_actor self{owner.cp.system};
    for (int i = 0; i < 16; ++i) {
      self->send(owner.node->actor, replay_atom::value, replay_request{*h, {}, step_notices::none});
    }
    // Answered once the core has taken the replays before it (the same path, in order).
    auto claimed = owner.cp.ask<bool>(owner.node->actor, claim_atom::value, std::string{});
    BOOST_REQUIRE_MESSAGE(claimed, owner.cp.why(claimed));
  }                             // the owner's process is gone: its connection closes
  owner_of next{process.port};  // claims once the node has seen the owner go
  const auto since = std::chrono::steady_clock::now();
  auto mine = next.cp.ask_for<op_notice>(20s, next.node->actor, register_atom::value,
                                         named("mine", work::named("noop")));
  BOOST_REQUIRE_MESSAGE(mine, next.cp.why(mine));
  BOOST_TEST((mine->state == op_state::completed), next.cp.render(mine->cause));
  BOOST_TEST_MESSAGE("the next owner's operation ended "
                     << std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::steady_clock::now() - since)
                            .count()
                     << " ms after it claimed the node");
}
