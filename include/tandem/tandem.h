// tandem: Keras-shaped neural-network training in C++.
#pragma once

#include "tandem/array.h"
#include "tandem/callbacks.h"
#include "tandem/config.h"
#include "tandem/datasets.h"
#include "tandem/error.h"
#include "tandem/layers.h"
#include "tandem/model.h"
#include "tandem/mpi.h"
#include "tandem/optimizers.h"
#include "tandem/samples.h"
#include "tandem/zoo.h"
