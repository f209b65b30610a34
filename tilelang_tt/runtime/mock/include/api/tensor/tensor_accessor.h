// tilelang-tt mock TT-Metalium: TensorAccessor over an interleaved DRAM buffer or a sharded DRAM / L1
// buffer (api/tensor/tensor_accessor.h).
#pragma once
#include <cstddef>
#include <cstdint>

#include "api/tensor/tensor_accessor_args.h"
#include "internal/dataflow/dataflow_api_common.h"
#include "internal/risc_attribs.h"

namespace ttmock {
uint64_t interleaved_noc_addr(bool is_dram, uint32_t bank_base, uint32_t page_size, uint32_t page_id,
                              uint32_t offset);
uint64_t sharded_noc_addr(bool is_dram, uint32_t bank_base, uint32_t page_size, uint32_t page_id, uint32_t offset,
                          uint32_t rank, const uint32_t* tensor_shape, const uint32_t* shard_shape,
                          uint32_t num_banks, const uint32_t* bank_coords);
// the distribution of a buffer (the SDK's tensor_accessor::DistributionSpec), read from the
// accessor's compile-time args
template <typename Args>
struct ArgsSpec {
    static constexpr bool is_dram = Args::is_dram;
    static constexpr bool is_sharded = Args::is_sharded;
    using args = Args;
};
}  // namespace ttmock

template <typename DSpecT>
struct TensorAccessor {
    using DSpec = DSpecT;
    static constexpr bool is_dram = DSpec::is_dram;

    template <std::size_t CTA_OFFSET, std::size_t CRTA_OFFSET>
    TensorAccessor(
        const TensorAccessorArgs<CTA_OFFSET, CRTA_OFFSET>& args,
        const size_t bank_base_address_in,
        const uint32_t page_size_in = TensorAccessorArgs<CTA_OFFSET, CRTA_OFFSET>::AlignedPageSize) :
        bank_base_address(bank_base_address_in), aligned_page_size(page_size_in) {
        (void)args;
    }

    FORCE_INLINE
    const uint32_t get_aligned_page_size() const { return aligned_page_size; }

    FORCE_INLINE
    std::uint64_t get_noc_addr(const uint32_t page_id, const uint32_t offset = 0, uint8_t noc = noc_index) const {
        (void)noc;
        if constexpr (DSpec::is_sharded) {
            using A = typename DSpec::args;
            const uint32_t* cta = kernel_compile_time_args.data();
            return ttmock::sharded_noc_addr(is_dram, bank_base_address, aligned_page_size, page_id, offset, A::RankCT,
                                            cta + A::TensorShapeCTAOffset, cta + A::ShardShapeCTAOffset,
                                            A::NumBanksCT, cta + A::BankCoordsCTAOffset);
        } else {
            return ttmock::interleaved_noc_addr(is_dram, bank_base_address, aligned_page_size, page_id, offset);
        }
    }

    constexpr uint32_t get_bank_base_address() const { return bank_base_address; }

private:
    uint32_t bank_base_address = 0;
    uint32_t aligned_page_size = 0;
};

template <std::size_t CTA_OFFSET, std::size_t CRTA_OFFSET>
TensorAccessor(const TensorAccessorArgs<CTA_OFFSET, CRTA_OFFSET>& args, size_t)
    -> TensorAccessor<ttmock::ArgsSpec<TensorAccessorArgs<CTA_OFFSET, CRTA_OFFSET>>>;

template <std::size_t CTA_OFFSET, std::size_t CRTA_OFFSET>
TensorAccessor(const TensorAccessorArgs<CTA_OFFSET, CRTA_OFFSET>& args, size_t, uint32_t)
    -> TensorAccessor<ttmock::ArgsSpec<TensorAccessorArgs<CTA_OFFSET, CRTA_OFFSET>>>;
