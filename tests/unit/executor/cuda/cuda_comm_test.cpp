// The CUDA backend's messages and collectives between two ranks. Registered to run as
// `mpirun -np 2`; skips without a CUDA device or with another number of ranks.
#include <gtest/gtest.h>
#include <mpi.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "executor/backend/cuda/cuda_backend.h"
#include "tests/unit/executor/cuda/cuda_test_support.h"

namespace mpsim::executor {
namespace {

std::unique_ptr<Backend>& shared_backend() {
  static std::unique_ptr<Backend> backend;
  return backend;
}

class CudaComm : public ::testing::Test {
 protected:
  void SetUp() override {
    MPSIM_REQUIRE_DEVICE(shared_backend() != nullptr, "needs a CUDA device and exactly 2 ranks (mpirun -np 2)");
  }
  Backend& backend() { return *shared_backend(); }
  int rank() { return backend().world_rank(); }
  int other() { return 1 - rank(); }
};

TEST_F(CudaComm, SendAndRecvBothWaysAtOnce) {
  const std::size_t n = 1 << 20;  // past NCCL's buffers, so a send needs its receiver
  std::vector<float> mine(n);
  std::iota(mine.begin(), mine.end(), static_cast<float>(rank() * 1000));
  float* out = backend().allocate(n);
  float* in = backend().allocate(n);
  backend().upload(mine, out);
  // Both ranks send first, then receive: a send must not hold up the receive that follows.
  for (int round = 0; round < 3; ++round) {
    auto handle = backend().send(out, n, other(), /*tag=*/round);
    backend().recv(in, n, other(), /*tag=*/round);
    handle->wait();
  }
  std::vector<float> got(n);
  backend().download(in, got);
  for (std::size_t i = 0; i < n; i += 4097)
    ASSERT_EQ(got[i], static_cast<float>(other() * 1000) + static_cast<float>(i));
  backend().release(out);
  backend().release(in);
}

TEST_F(CudaComm, MessagesBetweenAPairArriveInIssueOrder) {
  float* a = backend().allocate(4);
  float* b = backend().allocate(4);
  if (rank() == 0) {
    const std::array<float, 4> first = {1, 2, 3, 4};
    const std::array<float, 4> second = {5, 6, 7, 8};
    backend().upload(first, a);
    backend().upload(second, b);
    auto h1 = backend().send(a, 4, 1, 10);
    auto h2 = backend().send(b, 4, 1, 11);
    h1->wait();
    h2->wait();
  } else {
    backend().recv(a, 4, 0, 10);
    backend().recv(b, 4, 0, 11);
    std::array<float, 4> got{};
    backend().download(a, got);
    EXPECT_EQ(got[0], 1.0f);
    backend().download(b, got);
    EXPECT_EQ(got[3], 8.0f);
  }
  backend().barrier();
  backend().release(a);
  backend().release(b);
}

TEST_F(CudaComm, AMessageReceivedOutOfOrderIsAOneLineErrorAtTheNextWait) {
  // A channel's messages (backend.h: tags of one parity) are received in the order they were sent;
  // each receive's envelope is checked when the host next waits for the stream. Rank 0 sends tags 5
  // then 7; rank 1 asks for 7 first.
  float* a = backend().allocate(3);
  float* b = backend().allocate(3);
  if (rank() == 0) {
    const std::array<float, 3> five = {5, 5, 5};
    const std::array<float, 3> seven = {7, 7, 7};
    backend().upload(five, a);
    backend().upload(seven, b);
    auto h5 = backend().send(a, 3, 1, 5);
    auto h7 = backend().send(b, 3, 1, 7);
    h5->wait();
    h7->wait();
  } else {
    backend().recv(b, 3, 0, 7);
    backend().recv(a, 3, 0, 5);
    try {
      backend().synchronize();
      ADD_FAILURE() << "an out-of-order message went unnoticed";
    } catch (const BackendError& error) {
      const std::string what = error.what();
      EXPECT_NE(what.find("message from rank 0 out of order: the recv for tag 7 (3 floats) got tag 5"),
                std::string::npos)
          << what;
      EXPECT_EQ(what.find('\n'), std::string::npos);
    }
    backend().synchronize();  // reported once; the channel itself is intact
  }
  backend().barrier();
  backend().release(a);
  backend().release(b);
}

TEST_F(CudaComm, AnActivationAndAGradientMayBeTakenInEitherOrder) {
  // Different channels (tags 4 and 5): the V schedules interleave them differently on each side.
  float* a = backend().allocate(2);
  float* b = backend().allocate(2);
  if (rank() == 0) {
    const std::array<float, 2> four = {4, 4};
    const std::array<float, 2> five = {5, 5};
    backend().upload(four, a);
    backend().upload(five, b);
    auto h4 = backend().send(a, 2, 1, 4);
    auto h5 = backend().send(b, 2, 1, 5);
    h4->wait();
    h5->wait();
  } else {
    backend().recv(b, 2, 0, 5);
    backend().recv(a, 2, 0, 4);
    std::array<float, 2> got{};
    backend().download(b, got);
    EXPECT_EQ(got[0], 5);
    backend().download(a, got);
    EXPECT_EQ(got[0], 4);
  }
  backend().barrier();
  backend().release(a);
  backend().release(b);
}

TEST_F(CudaComm, ASendsSpanLastsUntilItsReceiverTakesIt) {
  const std::size_t n = 1 << 20;  // past NCCL's buffers, so the send needs its receiver
  float* data = backend().allocate(n);
  backend().barrier();
  if (rank() == 0) {
    backend().reset_marks();
    (void)backend().record_mark();
    auto handle = backend().send(data, n, 1, 40);
    (void)backend().record_mark();
    handle->wait();
    const auto times = backend().mark_times_ns();
    ASSERT_EQ(times.size(), 2u);
    // Rank 1 receives 50 ms after the barrier: the mark after the send is reached only then.
    EXPECT_GE(times[1] - times[0], 20'000'000) << "the send's span is " << times[1] - times[0] << " ns";
  } else {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    backend().recv(data, n, 0, 40);
    backend().synchronize();
  }
  backend().barrier();
  backend().release(data);
}

TEST_F(CudaComm, AllReduceReduceScatterAllGather) {
  const std::array<int, 2> world = {0, 1};
  auto group = backend().make_group(world);
  ASSERT_EQ(group->size(), 2);
  ASSERT_EQ(group->rank(), rank());
  const std::size_t n = 10;
  std::vector<float> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = static_cast<float>((rank() + 1) * 100) + static_cast<float>(i);
  float* data = backend().allocate(n);

  backend().upload(values, data);
  backend().all_reduce_sum(*group, data, n);
  std::vector<float> got(n);
  backend().download(data, got);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], 300.0f + 2.0f * static_cast<float>(i));

  backend().upload(values, data);
  backend().reduce_scatter_sum(*group, data, n);
  backend().download(data, got);
  const std::size_t slice = n / 2;
  for (std::size_t i = 0; i < slice; ++i) {
    const std::size_t at = static_cast<std::size_t>(rank()) * slice + i;
    ASSERT_EQ(got[at], 300.0f + 2.0f * static_cast<float>(at));
  }

  // Each rank's slice holds its rank number; all_gather spreads them.
  std::vector<float> mine(n, -1.0f);
  for (std::size_t i = 0; i < slice; ++i)
    mine[static_cast<std::size_t>(rank()) * slice + i] = static_cast<float>(rank());
  backend().upload(mine, data);
  backend().all_gather(*group, data, n);
  backend().download(data, got);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], i < slice ? 0.0f : 1.0f);

  EXPECT_THROW(backend().reduce_scatter_sum(*group, data, 7), BackendError);
  backend().release(data);
}

TEST_F(CudaComm, AllToAllWithUnevenCountsAndTheirExchange) {
  const std::array<int, 2> world = {0, 1};
  auto group = backend().make_group(world);
  // Rank r sends r + 1 floats to itself and 3 - r to the other (rank 1 sends 2 to itself, 2 to rank 0).
  const std::array<std::int64_t, 2> counts = {rank() == 0 ? 1 : 2, rank() == 0 ? 3 : 2};
  std::array<std::int64_t, 2> arriving{};
  backend().all_to_all_counts(*group, counts, arriving);
  EXPECT_EQ(arriving[static_cast<std::size_t>(rank())], counts[static_cast<std::size_t>(rank())]);
  EXPECT_EQ(arriving[static_cast<std::size_t>(other())], rank() == 0 ? 2 : 3);
  const std::array<std::size_t, 2> send = {static_cast<std::size_t>(counts[0]), static_cast<std::size_t>(counts[1])};
  const std::array<std::size_t, 2> recv = {static_cast<std::size_t>(arriving[0]), static_cast<std::size_t>(arriving[1])};
  std::vector<float> values(send[0] + send[1]);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(rank() * 100) + static_cast<float>(i);
  float* out = backend().allocate(values.size());
  float* in = backend().allocate(recv[0] + recv[1]);
  backend().upload(values, out);
  backend().all_to_all(*group, out, send, in, recv);
  std::vector<float> got(recv[0] + recv[1]);
  backend().download(in, got);
  // Block j of what arrives is rank j's block for this rank.
  const float from0 = rank() == 0 ? 0.0f : 1.0f;  // rank 0's block for rank 1 starts at its element 1
  const float from1 = rank() == 0 ? 100.0f : 102.0f;
  EXPECT_EQ(got[0], from0);
  EXPECT_EQ(got[recv[0]], from1);
  EXPECT_EQ(got.back(), from1 + static_cast<float>(recv[1] - 1));
  backend().release(out);
  backend().release(in);
}

TEST_F(CudaComm, GroupOfOneRankAndNonMembers) {
  const std::array<int, 1> only_one = {1};
  auto group = backend().make_group(only_one);
  EXPECT_EQ(group->size(), 1);
  float* data = backend().allocate(3);
  const std::array<float, 3> values = {1, 2, 3};
  backend().upload(values, data);
  if (rank() == 1) {
    EXPECT_EQ(group->rank(), 0);
    backend().all_reduce_sum(*group, data, 3);
    std::array<float, 3> got{};
    backend().download(data, got);
    EXPECT_EQ(got, values);
  } else {
    EXPECT_EQ(group->rank(), -1);
    EXPECT_THROW(backend().all_reduce_sum(*group, data, 3), BackendError);
  }
  backend().barrier();
  backend().release(data);
}

TEST_F(CudaComm, BarrierThenMarks) {
  backend().barrier();
  backend().reset_marks();
  (void)backend().record_mark();
  (void)backend().record_mark();
  backend().synchronize();
  const auto times = backend().mark_times_ns();
  ASSERT_EQ(times.size(), 2u);
  EXPECT_LE(times[0], times[1]);
}

}  // namespace
}  // namespace mpsim::executor

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // Every rank decides alike, so either all make the backend or none; without a GPU for each of the
  // two ranks the program says so and exits with the skip code (the CTest entry is then Skipped).
  int devices = mpsim::executor::cuda_test::cuda_device_count();
  MPI_Allreduce(MPI_IN_PLACE, &devices, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (size != 2 || devices < 2) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) std::printf("skipped: needs exactly 2 ranks (mpirun -np 2) and a GPU each; %d ranks, %d GPUs\n", size, devices);
    MPI_Finalize();
    return mpsim::executor::cuda_test::cannot_run_exit_code();
  }
  mpsim::executor::shared_backend() = mpsim::executor::make_cuda_backend(mpsim::executor::BackendOptions{});
  ::testing::InitGoogleTest(&argc, argv);
  const int result = RUN_ALL_TESTS();
  mpsim::executor::shared_backend().reset();
  MPI_Finalize();
  return result;
}
