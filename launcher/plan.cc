#include "launcher/plan.h"
