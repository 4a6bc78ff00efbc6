// Everything of Fiberscope's runtime in one include.
#pragma once

#include "fiberscope/cancel_protection.hpp"
#include "fiberscope/clock.hpp"
#include "fiberscope/condition.hpp"
#include "fiberscope/event.hpp"
#include "fiberscope/event_loop.hpp"
#include "fiberscope/file.hpp"
#include "fiberscope/future.hpp"
#include "fiberscope/group.hpp"
#include "fiberscope/mutex.hpp"
#include "fiberscope/object_name.hpp"
#include "fiberscope/process.hpp"
#include "fiberscope/queue.hpp"
#include "fiberscope/result.hpp"
#include "fiberscope/rwlock.hpp"
#include "fiberscope/semaphore.hpp"
