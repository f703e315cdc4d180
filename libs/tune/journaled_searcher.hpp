// JournaledSearcher: a Searcher journaled as events (journaled.hpp), as the trial schedulers are.
#pragma once

#include "libs/tune/journaled.hpp"
#include "libs/tune/searcher.hpp"

namespace tunebus {

using JournaledSearcher = Journaled<Searcher>;

}  // namespace tunebus
