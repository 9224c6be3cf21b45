// The one place Boost.Asio is included. Debian's Boost 1.74 Asio does not
// compile under C++20 with GCC 12 unless <utility> comes first
// (awaitable.hpp: 'exchange' is not a member of 'std').
#pragma once

#include <utility>
#include <boost/asio.hpp>

namespace asio = boost::asio;
