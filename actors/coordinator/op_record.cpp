// actors/coordinator/op_record.cpp
#include "cudactor/actors/coordinator/op_record.hpp"

namespace cudactor::detail {

void buffers_block::release(buffers_block* block) noexcept {
  if (--block->live == 0) delete block;
}

void buffers_release::operator()(op_buffers* b) const noexcept {
  buffers_block* block = b->block;
  if (block == nullptr) {
    delete b;
    return;
  }
  *b = op_buffers{};  // what it holds goes now, not with the block
  buffers_block::release(block);
}

}  // namespace cudactor::detail
