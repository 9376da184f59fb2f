// src/ir/attr_reflect.hpp -- Boost.Hana adaptation of every attribute struct in attrs.def.
// Internal: public headers stay free of Boost.
#pragma once

#include "rlx/ir/attrs.hpp"

#include <boost/hana.hpp>

#define F(type, name, def) , name
#define ATTRS(Name, FIELDS) BOOST_HANA_ADAPT_STRUCT(rlx::ir::Name FIELDS);
#include "rlx/ir/attrs.def"
#undef F
